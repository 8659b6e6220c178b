"""Tests of the scripts' error handling helper."""

from vidcorr.errors import UserError, run_cli


def _raise(error):
    def work():
        raise error
    return work


def test_run_cli_codes_and_lines(capsys):
    assert run_cli(lambda: 41 + 1) == (0, 42)
    assert run_cli(_raise(UserError("no such file: a.png"))) == (2, None)
    assert capsys.readouterr().err == "error: no such file: a.png\n"
    assert run_cli(_raise(KeyboardInterrupt()), interrupted="stopped; nothing saved") == (130, None)
    assert capsys.readouterr().err == "stopped; nothing saved\n"
    assert run_cli(_raise(OSError("disk")), errors=(UserError, OSError)) == (2, None)
    assert capsys.readouterr().err == "error: disk\n"
    try:  # other errors are bugs: they keep their traceback
        run_cli(_raise(ZeroDivisionError("bug")))
    except ZeroDivisionError:
        pass
    else:
        raise AssertionError("a bug was swallowed")


def test_first_line_prefers_the_reason_without_its_noise():
    import errno

    from vidcorr.compat import tf
    from vidcorr.errors import first_line

    disk = OSError(errno.ENOSPC, "No space left on device", "/full/x")
    assert first_line(disk) == "No space left on device"
    op = tf.errors.ResourceExhaustedError(None, None, "\n  out of memory\n\tin op Conv2D\n")
    assert first_line(op) == "out of memory"
    assert first_line(ValueError("first\nsecond")) == "first"
    assert first_line(KeyError()) == "KeyError"


# TensorFlow 2.21's message for a checkpoint written onto a full tmpfs (recorded here), and
# TensorFlow 1.15's form of the same error.
TF2_FULL_DISK = (
    "Graph execution error:\n\nDetected at node 'save/SaveV2' defined at (most recent call "
    "last):\n    File \"/tmp/save.py\", line 4, in <module>\nNode: 'save/SaveV2'\n"
    "/tmp/tfs/run/model.ckpt-3.data-00000-of-00001.tempstate12821557553766566219; No space "
    "left on device\n\t [[{{node save/SaveV2}}]]\nHint: If you want to see a list of allocated "
    "tensors when OOM happens, add report_tensor_allocations_upon_oom to RunOptions.")
TF1_READ_ONLY = ("/ro/run/model.ckpt-3_temp_1a2b/part-00000-of-00001.data-00000-of-00001."
                 "tempstate77; Read-only file system\n\t [[node save/SaveV2 (defined at x.py:4) ]]")


def test_first_line_finds_the_os_reason_inside_tensorflow_messages():
    from vidcorr.compat import tf
    from vidcorr.errors import first_line

    full = tf.errors.ResourceExhaustedError(None, None, TF2_FULL_DISK)
    assert first_line(full) == "No space left on device"
    assert first_line(tf.errors.UnknownError(None, None, TF1_READ_ONLY)) == \
        "Read-only file system"
    assert first_line(PermissionError(13, "Permission denied", "/x")) == "Permission denied"
    # TensorFlow 2's frame lines are not the reason; the line after them is
    other = tf.errors.InvalidArgumentError(None, None, (
        "Graph execution error:\n\nDetected at node 'check' defined at (most recent call "
        "last):\n    File \"a.py\", line 1, in <module>\nNode: 'check'\nassertion failed: "
        "[frames must be float in [0, 1]]\n\t [[{{node check}}]]"))
    assert first_line(other) == "assertion failed: [frames must be float in [0, 1]]"
