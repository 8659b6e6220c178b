"""Errors that mean "the user asked for something wrong", reported in one line."""

import sys

__all__ = ["UserError", "run_cli"]


class UserError(ValueError):
    """A bad config, file, path or argument. Scripts print it without a traceback."""


def run_cli(work, errors=(UserError,), interrupted="interrupted"):
    """Runs a script's work, turning user errors and Ctrl-C into one line and an exit code.

    Args:
      work: a callable with no arguments.
      errors: exception types printed as ``error: ...`` (exit code 2).
      interrupted: the line printed on ``KeyboardInterrupt`` (exit code 130).

    Returns:
      ``(exit code, result)``: ``(0, work())``, or ``(2 or 130, None)``.
    """
    try:
        return 0, work()
    except errors as err:
        print("error: %s" % err, file=sys.stderr)
        return 2, None
    except KeyboardInterrupt:
        print(interrupted, file=sys.stderr)
        return 130, None
