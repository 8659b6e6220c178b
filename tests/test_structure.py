"""The package's structure: public names, sub-packages whose imports run downhill, no cycles."""

import ast
import importlib
import os
import re

import pytest

import vidcorr

ROOT = os.path.dirname(os.path.abspath(vidcorr.__file__))

# Every name a notebook could take from ``vidcorr`` before the sub-packages, and the new ones.
PUBLIC = ["tf", "batch_norm", "fake_quant", "quantize_transform", "layers", "NetworkSpec",
          "layer_plan", "mind", "load_config", "Trainer", "train", "Matcher", "Matches",
          "MatchOptions", "to_rgb_float", "match_picture", "run_evaluation", "EvaluationPlan",
          "adapt", "AdaptSettings", "track", "Tracks", "TrackSettings",
          "frame_flows", "PixelGradients"]

# Sub-packages by layer: a module may import its own layer and the layers below it only.
# readout, training and tracking are side by side: none imports another.
LAYERS = {"": 0, "model": 1, "io": 2, "readout": 3, "training": 3, "tracking": 3,
          "evaluation": 4, "apps": 5}


def _modules():
    """``{dotted name: path}`` of every module of the package."""
    out = {}
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, f), os.path.dirname(ROOT))
                name = rel[:-3].replace(os.sep, ".")
                out[name[:-len(".__init__")] if name.endswith(".__init__") else name] = \
                    os.path.join(folder, f)
    return out


def _imports(path):
    """The vidcorr modules a file imports (at any depth of the file)."""
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("vidcorr")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vidcorr"):
            for a in node.names:
                full = node.module + "." + a.name
                found.add(full if full in MODULES else node.module)
    return found


MODULES = _modules()


def _package(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else ""


def test_every_public_name_imports_from_vidcorr():
    assert sorted(vidcorr.__all__) == sorted(PUBLIC + ["__version__"])
    for name in PUBLIC:
        assert getattr(vidcorr, name) is not None, name
    assert vidcorr.train is importlib.import_module("vidcorr.training.trainer").train
    assert vidcorr.layers is importlib.import_module("vidcorr.model.layers")
    with pytest.raises(AttributeError):
        vidcorr.no_such_name  # noqa: B018


def test_sub_packages_import_downhill_only():
    uphill = []
    for module, path in MODULES.items():
        own = _package(module)
        for target in _imports(path):
            other = _package(target)
            if other == own:
                continue
            if LAYERS[other] > LAYERS[own] or (LAYERS[other] == LAYERS[own] and own):
                uphill.append("%s -> %s" % (module, target))
    assert uphill == []


def test_no_import_cycles():
    graph = {m: {t for t in _imports(p) if t in MODULES and t != m and t != "vidcorr"}
             for m, p in MODULES.items()}
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in graph[node]:
            if state.get(nxt) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack + [nxt]))
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for module in graph:
        if module not in state:
            visit(module, [module])


def test_tensorflow_is_imported_in_one_module_only():
    importers = [m for m, p in MODULES.items()
                 if any(isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                     (getattr(n, "module", None) or a.name).startswith("tensorflow")
                     for a in n.names) for n in ast.walk(ast.parse(open(p).read())))]
    assert importers == ["vidcorr.compat"]


def test_the_layout_page_names_paths_that_exist():
    """docs/layout.md, "where things live": every path it names is in the repository."""
    repo = os.path.dirname(ROOT)
    with open(os.path.join(repo, "docs", "layout.md"), encoding="utf-8") as f:
        text = f.read()
    paths = set(re.findall(r"`((?:vidcorr|tests)/[\w/.]+)`", text))
    assert len(paths) >= 20, paths
    missing = sorted(p for p in paths if not os.path.exists(os.path.join(repo, p)))
    assert not missing, missing


def test_every_package_module_has_its_test_module():
    """Tests mirror the package: vidcorr/<sub>/<module>.py is tested in
    tests/<sub>/test_<module>.py."""
    repo = os.path.dirname(ROOT)
    missing = []
    for folder, _, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                sub = os.path.relpath(folder, ROOT)
                test = os.path.join(repo, "tests", "" if sub == "." else sub, "test_" + name)
                if not os.path.isfile(test):
                    missing.append(os.path.relpath(test, repo))
    assert not missing, missing
