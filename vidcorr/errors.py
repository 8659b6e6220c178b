"""Errors that mean "the user asked for something wrong", reported in one line."""

import errno
import os
import re
import signal
import sys
import threading

__all__ = ["UserError", "Interrupted", "run_cli", "first_line", "OS_REASONS"]


class UserError(ValueError):
    """A bad config, file, path or argument. Scripts print it without a traceback."""


# The OS's reasons for an I/O failure, as TensorFlow's messages carry them too
# ("...tempstate123; No space left on device"): where one is in a message, it is the reason.
OS_REASONS = tuple(os.strerror(code) for code in (
    errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENAMETOOLONG,
    errno.EIO, errno.ENOTDIR, errno.EISDIR))
# TensorFlow 2's lines around the reason of a graph-mode error.
_NOISE = re.compile(r"^(Graph execution error:?|Detected at node .*|Node: .*|File \".*|"
                    r"Original stack trace for .*|\[\[.*\]\]|Hint: .*)$")


def first_line(err):
    """The reason of an exception in one line, for a one-line error.

    An OS reason anywhere in the text (``No space left on device``, ``Read-only file
    system``, ``Permission denied`` ...: TensorFlow's I/O errors carry them after a
    temporary file's name) is the reason. Else the first line of TensorFlow's
    ``message`` or the OS's ``strerror`` (not ``[Errno 28] ...``) or ``str(err)``,
    skipping TensorFlow 2's "Graph execution error:" and node lines; the exception's
    type where all are empty.
    """
    texts = [str(t or "") for t in (getattr(err, "message", None),
                                    getattr(err, "strerror", None), str(err))]
    for reason in OS_REASONS:
        if any(reason in text for text in texts):
            return reason
    for text in texts:
        lines = [line.strip() for line in text.strip().splitlines()]
        lines = [line for line in lines if line and not _NOISE.match(line)]
        if lines:
            return lines[0]
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
