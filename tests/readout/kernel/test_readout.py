"""The kernel read-out (vidcorr.readout.kernel.readout) as the Matcher and the CLI use it."""

import os
import numpy as np
import pytest
from vidcorr.compat import tf
from vidcorr.errors import UserError
from vidcorr.readout.inference import find_model, fold_batch_norm
from vidcorr.readout.kernel.graph import LevelGraph as _Level
from vidcorr.readout.matching import DEFAULT_MODEL, Matcher
K = 5  # the random kernel checkpoint's kernel size (tests/conftest.py)


def test_a_network_without_a_kernel_head_refuses_the_kernel_readout(random_checkpoint):
    with pytest.raises(UserError, match="needs a network with a kernel head") as err:
        Matcher(random_checkpoint, readout="kernel")
    assert "\n" not in str(err.value) and "sensitivity" in str(err.value)
    Matcher(random_checkpoint, readout="sensitivity").close()  # the exact read-out still works


def test_auto_readout_follows_the_network(random_kernel_checkpoint, random_checkpoint):
    with_head = Matcher(random_kernel_checkpoint)
    without = Matcher(random_checkpoint)
    assert (with_head.options.readout, without.options.readout) == ("kernel", "sensitivity")
    with_head.close()
    without.close()


def test_correspond_script_with_the_kernel_readout_at_stride_1_is_dense(
        random_kernel_checkpoint, tmp_path):
    import subprocess
    import sys

    from vidcorr.io.flowio import read_flo
    from vidcorr.readout.matching import Matches

    rng = np.random.RandomState(2)
    paths = []
    for name in ("f0.npy", "f2.npy"):
        from PIL import Image
        path = str(tmp_path / name.replace(".npy", ".png"))
        Image.fromarray((255 * rng.rand(48, 64, 3)).astype(np.uint8)).save(path)
        paths.append(path)
    out = tmp_path / "out"
    script = os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts", "correspond.py")
    proc = subprocess.run([sys.executable, script] + paths + [
        "--checkpoint", random_kernel_checkpoint, "--readout", "kernel", "--stride", "1",
        "--min-confidence", "0", "--levels", "1", "--out", str(out), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode == 0, proc.stderr
    matches = Matches.load(str(out / "f0__f2.npz"))
    assert len(matches) == 48 * 64 and matches.valid.all()
    # every pixel gets a match; the sparse flow is defined where a match lands
    flo = read_flo(str(out / "f0__f2.flo"))
    assert flo.shape == (48, 64, 2) and np.isfinite(flo[..., 0]).mean() > 0.5
    proc = subprocess.run([sys.executable, script] + paths + ["--readout", "blend"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    assert proc.returncode == 2 and "invalid choice: 'blend'" in proc.stderr
