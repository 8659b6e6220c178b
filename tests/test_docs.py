"""The API reference builds from the docstrings (``scripts/api_docs.py``, pdoc), and its
check finds what it should: a public name without a docstring fails the build."""

import importlib.util
import os
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _script():
    spec = importlib.util.spec_from_file_location(
        "api_docs", os.path.join(ROOT, "scripts", "api_docs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_check_finds_a_public_name_without_a_docstring(tmp_path, monkeypatch):
    pytest.importorskip("pdoc")
    (tmp_path / "somemod.py").write_text(
        '"""A module."""\n\n\ndef documented():\n    """Yes."""\n\n\ndef bare():\n    pass\n\n\n'
        'def _private():\n    pass\n\n\nclass Thing(object):\n    """A class."""\n\n'
        '    def method(self):\n        pass\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _script().undocumented(["somemod"]) == ["somemod.bare", "somemod.Thing.method"]
    sys.modules.pop("somemod", None)


def test_the_api_reference_builds_without_problems(tmp_path):
    pytest.importorskip("pdoc")
    assert _script().build(str(tmp_path)) == []
    page = (tmp_path / "vidcorr" / "readout" / "sensitivity" / "pixels.html").read_text()
    assert "Per-pixel input gradients of a network" in page  # PixelGradients' docstring
    assert (tmp_path / "index.html").exists()
