"""vidcorr.malloc: one glibc heap arena once vidcorr.compat is imported, counted by
glibc's own ``malloc_stats`` after threads have allocated."""

import os
import platform
import re
import subprocess
import sys

import pytest

from vidcorr.malloc import limit_arenas

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="glibc's malloc only")

_THREADS = """
import ctypes, threading
started = threading.Barrier(6)
def work():  # all six threads alive at once, so none reuses an arena another left
    started.wait()
    keep = [bytearray(4096) for _ in range(64)]  # malloc'd, past Python's small-object pool
    started.wait()
threads = [threading.Thread(target=work) for _ in range(6)]
[t.start() for t in threads]
[t.join() for t in threads]
ctypes.CDLL("libc.so.6").malloc_stats()  # one "Arena N:" block per arena, on stderr
"""


def _arenas(prelude, **env):
    """The number of heap arenas glibc reports after six threads have allocated."""
    environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    environ.update(env)
    proc = subprocess.run([sys.executable, "-c", prelude + _THREADS], env=environ,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=True)
    return len(re.findall(r"^Arena \d+:", proc.stderr, re.M))


def test_importing_the_tensorflow_module_leaves_one_arena_for_all_threads():
    assert _arenas("import vidcorr.compat\n") == 1
    assert _arenas("") > 1  # glibc's default: the count above is not a constant
    assert _arenas("from vidcorr.malloc import limit_arenas\nlimit_arenas(2)\n") == 2


def test_the_users_malloc_arena_max_is_left_to_glibc():
    prelude = ("from vidcorr.malloc import limit_arenas\n"
               "assert limit_arenas() is False\n")
    assert _arenas(prelude, MALLOC_ARENA_MAX="3") == 3


def test_a_limit_below_one_is_an_error():
    with pytest.raises(ValueError, match="at least 1"):
        limit_arenas(0)
