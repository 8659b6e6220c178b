"""Runs the example notebooks top to bottom and stores them with their outputs.

    pip install -e ".[notebooks,eval]" && python examples/notebooks/execute.py [NOTEBOOK ...]

Each notebook runs in its own folder with a fresh kernel; a failing cell stops with the
error (exit 1) and leaves the stored notebook as it was. TensorFlow's native start-up log
lines (absl's, oneDNN's notice) are left out of the stored outputs.
"""

import glob
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))


def execute(path):
    """Runs one notebook and writes it back with its outputs; returns the seconds taken."""
    import nbformat
    from nbclient import NotebookClient

    from vidcorr.quiet import is_native_log_line

    notebook = nbformat.read(path, as_version=4)
    start = time.time()
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}}
                   ).execute()
    for cell in notebook.cells:
        outputs = []
        for output in cell.get("outputs", []):
            if output.get("name") == "stderr":
                lines = [l for l in output["text"].splitlines(True)
                         if not is_native_log_line(l.rstrip("\n").encode())]
                if not lines:
                    continue
                output["text"] = "".join(lines)
            outputs.append(output)
        if cell.cell_type == "code":
            cell.outputs = outputs
    nbformat.write(notebook, path)
    return time.time() - start


def main(paths):
    for path in paths or sorted(glob.glob(os.path.join(HERE, "*.ipynb"))):
        print("%s: %.0f s" % (os.path.basename(path), execute(path)))


if __name__ == "__main__":
    main(sys.argv[1:])
