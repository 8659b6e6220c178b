"""The command-line programs' argument handling (vidcorr.apps.cli): one line, the right code."""

import os

import pytest

from vidcorr.apps import cli

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAIR = [os.path.join(ROOT, "examples", "cockatoo_262.png"),
        os.path.join(ROOT, "examples", "cockatoo_264.png")]


def _usage_error(main, argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


# every flag's own checks: tests/apps/test_cli_match.py; here, that vidcorr-correspond uses them
@pytest.mark.parametrize("flag,value,message", [
    ("--levels", "0", "--levels must be an integer >= 1"),
    ("--refine-sampler", "cubic", "argument --refine-sampler: invalid choice: 'cubic'"),
])
def test_bad_match_options_name_their_flag(flag, value, message, capsys):
    line = _usage_error(cli.correspond_main, PAIR + [flag, value], capsys)
    assert message in line, line


def test_export_takes_one_run_for_serving(tmp_path, capsys):
    line = _usage_error(cli.export_main, ["--run", "a", "--run", "b", "--out", str(tmp_path / "s"),
                                          "--format", "saved_model"], capsys)
    assert "--format saved_model takes one --run" in line, line
    for extra in (["--notes", "tuned"], ["--evaluation", "e.json"]):
        line = _usage_error(cli.export_main, ["--run", "a", "--out", str(tmp_path / "s"),
                                              "--format", "saved_model"] + extra, capsys)
        assert "--evaluation and --notes go into a checkpoint export's card" in line, line


def test_bad_evaluate_arguments_are_one_line(tmp_path, capsys):
    out = str(tmp_path / "r")
    assert "--levels: expected integers" in _usage_error(
        cli.evaluate_main, ["--levels", "x", "--out", out], capsys)
    for argv, message in ((["--width", "-5"], "width must be 0 (full size) or positive"),
                          (["--untrained", "-1"], "width must be positive, got -1.0"),
                          (["--stride", "0"], "stride must be >= 1")):
        assert cli.evaluate_main(argv + ["--out", out, "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("error: ") and message in err[-1], err
    assert not os.path.exists(out + ".md")


def test_correspond_input_errors(tmp_path, capsys):
    out = str(tmp_path / "o")
    assert cli.correspond_main([PAIR[0], "--out", out, "--no-progress"]) == 2
    assert "exactly two images" in capsys.readouterr().err
    assert cli.correspond_main(["--pairs", str(tmp_path / "none.txt"), "--out", out]) == 2
    assert "pairs file not found" in capsys.readouterr().err
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00a b\n")
    assert cli.correspond_main(["--pairs", str(tmp_path / "bin.txt"), "--out", out]) == 2
    assert "is not a UTF-8 text file" in capsys.readouterr().err
    assert not os.path.exists(out)  # nothing created
