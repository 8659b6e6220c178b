"""The matcher's command-line flags (vidcorr.apps.cli_match): each flag reaches its
MatchOptions field, the flags' defaults are MatchOptions' own, and a bad value is a usage
error naming its flag."""

import argparse
import dataclasses

import pytest

from vidcorr.apps import cli_match
from vidcorr.readout.options import MatchOptions


def _parser():
    parser = argparse.ArgumentParser(prog="vidcorr-test")
    cli_match.add_match_arguments(parser)
    return parser


def _options(argv, names=cli_match.MATCH_FLAGS):
    parser = _parser()
    return cli_match.match_options(parser, parser.parse_args(argv), names)


def test_every_flag_is_a_match_option_field():
    fields = {f.name for f in dataclasses.fields(MatchOptions)}
    assert set(cli_match.MATCH_FLAGS) <= fields


def test_no_flags_give_the_default_options():
    assert _options([]) == MatchOptions()


@pytest.mark.parametrize("argv,field,value", [
    (["--max-size", "512"], "max_size", 512),
    (["--levels", "2"], "levels", 2),
    (["--upsample", "2"], "upsample", 2),
    (["--readout", "sensitivity"], "readout", "sensitivity"),
    (["--refine", "none"], "refine", "none"),
    (["--refine-sampler", "bspline"], "refine_sampler", "bspline"),
    (["--memory-mb", "64"], "memory_mb", 64),
    (["--min-confidence", "0.25"], "min_confidence", 0.25),
    (["--max-seconds", "0"], "max_seconds", 0.0),
])
def test_each_flag_reaches_its_field_and_only_it(argv, field, value):
    options = _options(argv)
    assert getattr(options, field) == value
    expected = dataclasses.replace(MatchOptions(), **{field: value})
    assert options == expected


def test_flags_left_out_of_names_keep_their_defaults():
    options = _options(["--levels", "2", "--refine", "none"], names=("levels",))
    assert options.levels == 2
    assert options.refine == MatchOptions().refine


@pytest.mark.parametrize("flag,value,message", [
    ("--levels", "0", "--levels must be an integer >= 1"),
    ("--memory-mb", "0", "--memory-mb must be an integer >= 1 (MB)"),
    ("--min-confidence", "2", "--min-confidence must be in [0, 1]"),
    ("--max-seconds", "-1", "--max-seconds must be >= 0"),
    ("--max-size", "8", "--max-size must be an integer of at least"),
    ("--refine", "lk", "argument --refine: invalid choice: 'lk'"),
    ("--refine-sampler", "cubic", "argument --refine-sampler: invalid choice: 'cubic'"),
])
def test_bad_values_are_usage_errors_naming_their_flag(flag, value, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _options([flag, value])
    assert exit_info.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in line, line
    assert "\n" not in line
