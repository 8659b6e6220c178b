"""The scripts' quiet start-up: TensorFlow's native log lines filtered, everything else kept."""

import os
import subprocess
import sys

from vidcorr.quiet import is_native_log_line

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

NATIVE = [
    b"2026-11-30 21:00:00.123456: W tensorflow/stream_executor/platform/default/"
    b"dso_loader.cc:55] Could not load dynamic library 'libcudart.so.10.0'",
    b"2026-11-30 21:00:00.123456: E tensorflow/stream_executor/cuda/cuda_driver.cc:318] "
    b"failed call to cuInit: UNKNOWN ERROR (303)",
    b"I0000 00:00:1796075808.890350   13086 port.cc:153] oneDNN custom operations are on.",
    b"E0000 00:00:1796075808.890350   13086 cuda_executor.cc:1228] INTERNAL: cuInit failed",
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
]
KEPT = [b"error: checkpoint not found: x", b"Traceback (most recent call last):",
        b"I0 is not a log line", b"2026 frames loaded", b"WARNING: something of ours"]


def test_native_line_patterns():
    assert all(is_native_log_line(line) for line in NATIVE)
    assert not any(is_native_log_line(line) for line in KEPT)


def test_filter_passes_everything_else_in_order():
    program = r"""
import os, sys
from vidcorr.quiet import quiet_stderr
with quiet_stderr():
    os.write(2, %r)
    print("python line", file=sys.stderr)
    os.write(2, b"\r 50%%|#####     |")  # a progress bar, no newline
    os.write(2, b"\r100%%|##########|\n")
    os.write(2, %r)
print("after", file=sys.stderr)
""" % (b"\n".join([NATIVE[0], KEPT[0], NATIVE[2], KEPT[1]]) + b"\n", NATIVE[4] + b"\n")
    proc = subprocess.run([sys.executable, "-c", program], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (KEPT[0] + b"\n" + KEPT[1] + b"\npython line\n"
                           b"\r 50%|#####     |\r100%|##########|\nafter\n")


def test_scripts_start_quiet_and_verbose_shows_more(tmp_path):
    args = [sys.executable, os.path.join(ROOT, "scripts", "correspond.py"),
            os.path.join(ROOT, "examples", "cockatoo_262.png"),
            os.path.join(ROOT, "examples", "cockatoo_264.png"),
            "--checkpoint", str(tmp_path / "none"), "--out", str(tmp_path / "out")]
    env = dict(os.environ)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    quiet = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           universal_newlines=True, timeout=120)
    assert quiet.returncode == 2
    assert quiet.stderr.splitlines() == ["error: checkpoint not found: %s (give a run directory "
                                         "or a checkpoint prefix like runs/x/model.ckpt-1000)"
                                         % (tmp_path / "none")]
    verbose = subprocess.run(args + ["--verbose"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, universal_newlines=True,
                             timeout=120)
    assert verbose.returncode == 2 and verbose.stderr.endswith(quiet.stderr)
    # What this TensorFlow build logs on import past the level vidcorr sets (oneDNN and absl
    # lines on some builds; TensorFlow 2.21 prints none) is shown with --verbose only.
    plain = subprocess.run([sys.executable, "-c", "import tensorflow.compat.v1 as tf; "
                            "tf.disable_v2_behavior()"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=dict(env, TF_CPP_MIN_LOG_LEVEL="2"),
                           universal_newlines=True, timeout=120)
    native = [l for l in plain.stderr.splitlines() if is_native_log_line(l.encode())]
    if native:
        assert len(verbose.stderr.splitlines()) > len(quiet.stderr.splitlines()), verbose.stderr
