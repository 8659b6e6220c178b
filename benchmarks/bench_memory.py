"""Peak resident memory of the whole match over repeated runs, with one heap arena
(vidcorr's default, :mod:`vidcorr.malloc`) and with glibc's default arenas.

Each setting runs in its own process: the default read-out (refinement included) matches
one textured pair of the size ``--runs`` times at stride 1, and the process's peak RSS
(``ru_maxrss``) and the seconds are printed after each run. For glibc's default the
child replaces :func:`vidcorr.malloc.limit_arenas` by a function that does nothing before
TensorFlow is imported, so glibc keeps its own limit (eight arenas per core).

    python benchmarks/bench_memory.py [--size 720x1280] [--threads 1] [--runs 3]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def child(size, threads, runs, arenas):
    if arenas == "glibc":
        import vidcorr.malloc
        vidcorr.malloc.limit_arenas = lambda arenas=1: False  # before vidcorr.compat's import
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from trace_match import _pair
    from vidcorr.readout.matching import Matcher

    h, w = (int(v) for v in size.split("x"))
    a, b = _pair(h, w)
    matcher = Matcher(readout="kernel", threads=threads, min_confidence=0, max_seconds=0)
    rows = []
    for _ in range(runs):
        start = time.perf_counter()
        matcher.match(a, b, stride=1)
        rows.append((time.perf_counter() - start,
                     resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0 ** 2))
    matcher.close()
    print(json.dumps(rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="720x1280", help="HxW (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3, help="matches per process (default 3)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--arenas", default="one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.threads, args.runs, args.arenas)
    settings = (("one arena (default)", "one"), ("glibc's default", "glibc"))
    results = {}
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    for title, arenas in settings:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", args.size,
                               "--threads", str(args.threads), "--runs", str(args.runs),
                               "--arenas", arenas],
                              env=env, stdout=subprocess.PIPE, universal_newlines=True)
        if proc.returncode:
            print("%s: failed (exit %d)" % (title, proc.returncode))
            return 1
        results[title] = json.loads(proc.stdout.strip().splitlines()[-1])
    print("%s, %d thread(s), the default read-out (refined), %d runs in one process\n"
          % (args.size, args.threads, args.runs))
    print("| heap arenas | " + " | ".join("run %d: s / peak GB" % (i + 1)
                                          for i in range(args.runs)) + " |")
    print("|---|" + "---|" * args.runs)
    for title, rows in results.items():
        print("| %s | %s |" % (title, " | ".join("%.2f / %.2f" % tuple(r) for r in rows)))
    one, default = results[settings[0][0]], results[settings[1][0]]
    print("\npeak after the last run, one arena / glibc's default: %.2f; "
          "least seconds, one arena / glibc's default: %.2f"
          % (one[-1][1] / default[-1][1], min(r[0] for r in one) / min(r[0] for r in default)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
