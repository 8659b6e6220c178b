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
