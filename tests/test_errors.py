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
