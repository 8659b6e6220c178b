"""Errors that mean "the user asked for something wrong", reported in one line."""

import signal
import sys
import threading

__all__ = ["UserError", "Interrupted", "run_cli", "first_line"]


class UserError(ValueError):
    """A bad config, file, path or argument. Scripts print it without a traceback."""


def first_line(err):
    """The first line of an exception's reason, for a one-line error: TensorFlow's
    ``message`` or the OS's ``strerror`` where there is one (``No space left on device``,
    not ``[Errno 28] ...``), else ``str(err)``; the exception's type where all are empty."""
    for text in (getattr(err, "message", None), getattr(err, "strerror", None), str(err)):
        lines = [line for line in str(text or "").strip().splitlines() if line.strip()]
        if lines:
            return lines[0].strip()
    return type(err).__name__


class Interrupted(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's ``KeyboardInterrupt`` so clean-ups run."""

    signum = signal.SIGTERM


def _raise_interrupted(signum, frame):
    raise Interrupted()


def run_cli(work, errors=(UserError,), interrupted="interrupted"):
    """Runs a script's work, turning user errors, Ctrl-C and SIGTERM into one line and an
    exit code.

    While ``work`` runs, SIGTERM raises :class:`Interrupted` (a ``KeyboardInterrupt``),
    so ``finally`` clean-ups run as they do for Ctrl-C (work that handles signals
    itself, like training, installs its own handlers inside).

    Args:
      work: a callable with no arguments.
      errors: exception types printed as ``error: ...`` (exit code 2).
      interrupted: the line printed on an interrupt (exit code 128 + the signal:
        130 for Ctrl-C, 143 for SIGTERM).

    Returns:
      ``(exit code, result)``: ``(0, work())``, or ``(2, 130 or 143, None)``.
    """
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        return 0, work()
    except errors as err:
        print("error: %s" % err, file=sys.stderr)
        return 2, None
    except KeyboardInterrupt as err:
        signum = getattr(err, "signum", signal.SIGINT)
        print(interrupted, file=sys.stderr)
        return 128 + int(signum), None
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
