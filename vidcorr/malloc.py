"""One C heap arena for the process, so that resident memory stays flat run after run.

glibc's ``malloc`` gives a thread that finds the heap busy an arena of its own (up to
eight per core) and keeps what is freed in each arena for that arena's later use.
TensorFlow's op threads allocate and free tensors of every size, so the peak resident
memory of a process matching 720x1280 pairs grew from match to match (to 1.88-2.12 GB
after four matches of one pair, from 1.74 GB after the first), although at most 0.4 GB of
tensors are alive at once. With one arena it stayed at 1.76-1.84 GB, at the same speed
(``benchmarks/bench_memory.py``; ``docs/benchmarks.md``, "Memory").

:func:`limit_arenas` is called by :mod:`vidcorr.compat` before TensorFlow is imported
(before any of its threads exist). It does nothing where the C library is not glibc, and
nothing when ``MALLOC_ARENA_MAX`` is set: glibc reads that variable itself, so a user who
wants more arenas sets it (glibc's own default is eight per core).
"""

import ctypes
import ctypes.util
import os
import sys

__all__ = ["limit_arenas", "M_ARENA_MAX"]

M_ARENA_MAX = -8  # mallopt's parameter number for the arena limit (glibc's malloc.h)


def limit_arenas(arenas=1):
    """Limits glibc's malloc to ``arenas`` heap arenas for the rest of the process.

    Args:
      arenas: the most arenas glibc may create (at least 1).

    Returns:
      True when the limit was set; False when it was left to ``MALLOC_ARENA_MAX`` or the C
      library is not glibc.

    Raises:
      ValueError: if ``arenas`` is below 1.
    """
    if arenas < 1:
        raise ValueError("arenas must be at least 1, got %r" % (arenas,))
    if "MALLOC_ARENA_MAX" in os.environ or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    if not hasattr(libc, "gnu_get_libc_version"):  # glibc's own (musl has no such function)
        return False
    mallopt = libc.mallopt
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return mallopt(M_ARENA_MAX, int(arenas)) == 1  # glibc returns 1 on success
