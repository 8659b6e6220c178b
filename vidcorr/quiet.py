"""Quiet start-up for the command-line programs: TensorFlow's native log lines filtered out.

TensorFlow's C++ runtime writes straight to file descriptor 2, past Python's
``sys.stderr`` and, on some builds, past ``TF_CPP_MIN_LOG_LEVEL`` (absl's
"All log messages before absl::InitializeLog()", the oneDNN notice, CUDA's
"failed call to cuInit" on a machine without a GPU). :func:`quiet_stderr`
points descriptor 2 at a pipe whose reader thread passes every line through
except those in TensorFlow's native log formats:

    2026-11-30 21:00:00.123456: W tensorflow/...cc:55] ...   (TensorFlow 1.x)
    I0000 00:00:1796075808.890350   13086 port.cc:153] ...   (absl, TensorFlow 2.x)

Errors vidcorr reports (``error: ...``), Python tracebacks and progress bars
pass unchanged. The scripts use it unless ``--verbose`` is given.
"""

import contextlib
import os
import re
import sys
import threading

__all__ = ["quiet_stderr", "is_native_log_line"]

_NATIVE = re.compile(
    rb"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] "  # TF 1.x: date, level, file
    rb"|[IWEF]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+:\d+\] "  # absl: I0000 00:00:... file:line]
    rb"|WARNING: All log messages before absl::InitializeLog\(\) is called)")
# An unfinished line that may still become a native one: a prefix of either format.
_MAYBE_NATIVE = re.compile(rb"^(\d{1,4}(-\d{0,2}){0,2}|[IWEF]\d{0,4}"
                           rb"|W(A(R(N(I(N(G(:)?)?)?)?)?)?)?)$"
                           rb"|^(\d{4}-|[IWEF]\d{4} |WARNING: All)")


def is_native_log_line(line):
    """Whether a line (bytes, no newline) is one of TensorFlow's native log lines."""
    return bool(_NATIVE.match(line))


class _Filter(object):
    def __init__(self):
        sys.stderr.flush()
        self.saved = os.dup(2)
        read_end, write_end = os.pipe()
        os.dup2(write_end, 2)
        os.close(write_end)
        self.read_end = read_end
        self.thread = threading.Thread(target=self._pump, name="vidcorr-stderr", daemon=True)
        self.thread.start()

    def _write(self, data):
        try:
            while data:
                data = data[os.write(self.saved, data):]
        except OSError:  # the real stderr is gone (closed terminal): nothing to show it on
            pass

    def _pump(self):
        pending = b""
        while True:
            try:
                chunk = os.read(self.read_end, 65536)
            except OSError:
                break
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            out = b"".join(line + b"\n" for line in lines if not is_native_log_line(line))
            # An unfinished line (a progress bar redrawn with \r) is passed on at once
            # unless it may still become a native log line.
            if pending and (b"\r" in pending or not _MAYBE_NATIVE.match(pending)):
                out, pending = out + pending, b""
            if out:
                self._write(out)
        if pending and not is_native_log_line(pending):
            self._write(pending)
        os.close(self.read_end)

    def stop(self):
        sys.stderr.flush()
        os.dup2(self.saved, 2)  # closes the pipe's last writer: the reader sees the end
        self.thread.join(timeout=5.0)
        os.close(self.saved)


@contextlib.contextmanager
def quiet_stderr(enabled=True):
    """Filters TensorFlow's native log lines out of descriptor 2 while the block runs.

    Args:
      enabled: False runs the block unfiltered (``--verbose``).
    """
    if not enabled:
        yield
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    flt = _Filter()
    try:
        yield
    finally:
        flt.stop()
