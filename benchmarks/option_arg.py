"""``--option KEY=VALUE``: a ``MatchOptions`` field over a benchmark's defaults, shared by
``bench_track.py`` and ``track_study.py``.

The value is JSON (``passes=2``, ``refine="none"``); a bare word that is not JSON is taken
as a string (``refine_sampler=bspline``). A malformed option, an unknown field or a bad
value is a one-line usage error (:func:`checked`), not a traceback.
"""

import argparse
import json

__all__ = ["option", "checked"]


def option(text):
    """``(key, value)`` of one ``KEY=VALUE`` (argparse's ``type=``).

    Raises:
      argparse.ArgumentTypeError: no ``=``, or an empty key.
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError("expected KEY=VALUE (a MatchOptions field), got %r"
                                         % text)
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def checked(parser, pairs):
    """The ``--option`` pairs as a dict, checked as ``MatchOptions`` fields over tracking's
    defaults; an unknown field or a bad value ends the script with ``parser.error``."""
    from vidcorr.apps.track import TRACK_OPTIONS
    from vidcorr.errors import UserError
    from vidcorr.readout.options import MatchOptions

    options = dict(pairs)
    try:
        MatchOptions().replace(**dict(TRACK_OPTIONS, **options))
    except UserError as e:
        parser.error(str(e))
    return options
