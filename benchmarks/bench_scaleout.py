"""Scale-out on this machine: towers, workers and sharded matching, as ratios.

1. Training steps/s of a small config (``configs/tiny_test.json`` at width 0.25,
   batch 8) as one process, as two towers on two virtual CPU devices
   (``--devices 2``) and as two workers with a parameter server on local ports
   (each worker a batch of 8: twice the samples per synchronous step). Steps/s
   come from the summaries' wall times (steps 20 to the end), so start-up is
   not counted.
2. Matching time of the default model on the sample pair (stride 8, one
   level) on one device and spread over two virtual CPU devices.

On a 2-core CPU the devices share the same cores, so this measures overhead
(the split, the averaging, the transport), not a speed-up; see the README for
what to expect on GPUs.

    python benchmarks/bench_scaleout.py [--steps 120]
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from vidcorr.compat import tf
from vidcorr.readout.matching import Matcher

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)
from vidcorr.training.distributed import free_ports  # noqa: E402
TRAIN = [sys.executable, os.path.join(ROOT, "scripts", "train.py")]


def _config(folder, steps):
    with open(os.path.join(ROOT, "configs", "tiny_test.json")) as f:
        config = json.load(f)
    config["train"].update(steps=steps, summary_every=10, validate_every=100000,
                           checkpoint_every=100000, batch_size=8)
    path = os.path.join(folder, "config.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return path


def _steps_per_second(run_dir, first=20):
    points = []
    for path in glob.glob(os.path.join(run_dir, "events.*")):
        for event in tf.train.summary_iterator(path):
            if event.step >= first and any(v.tag == "loss" for v in event.summary.value):
                points.append((event.step, event.wall_time))
    points.sort()
    (s0, t0), (s1, t1) = points[0], points[-1]
    return (s1 - s0) / (t1 - t0)


def _single(folder, config, extra):
    run = os.path.join(folder, "run" + "".join(extra).replace("-", ""))
    subprocess.run(TRAIN + ["--config", config, "--run-dir", run, "--no-progress"] + extra,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return _steps_per_second(run)


def _workers(folder, config):
    ports = free_ports(3)
    cluster = os.path.join(folder, "cluster.json")
    with open(cluster, "w") as f:
        json.dump({"ps": ["127.0.0.1:%d" % ports[0]],
                   "worker": ["127.0.0.1:%d" % p for p in ports[1:]]}, f)
    run = os.path.join(folder, "run_workers")
    common = ["--config", config, "--cluster", cluster, "--run-dir", run, "--no-progress"]
    procs = [subprocess.Popen(TRAIN + common + ["--job-name", job, "--task-index", str(i)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for job, i in (("ps", 0), ("worker", 0), ("worker", 1))]
    try:
        for proc in procs[1:]:
            proc.wait(timeout=3600)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    return _steps_per_second(run)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=120)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        config = _config(folder, args.steps)
        one = _single(folder, config, [])
        towers = _single(folder, config, ["--devices", "2"])
        workers = _workers(folder, config)
    print("| training, tiny config (towers split a batch of 8; workers: 8 each) "
          "| steps/s | samples/s | vs one process |")
    print("|---|---|---|---|")
    for label, rate, batch in (("one process", one, 8), ("2 towers (virtual CPUs)", towers, 8),
                               ("2 workers + 1 ps (local ports)", workers, 16)):
        print("| %s | %.2f | %.1f | %.2fx steps, %.2fx samples |"
              % (label, rate, rate * batch, rate / one, rate * batch / (one * 8)))
    a = os.path.join(ROOT, "examples", "cockatoo_262.png")
    b = os.path.join(ROOT, "examples", "cockatoo_264.png")
    times = {}
    for devices in (1, 2):
        matcher = Matcher(levels=1, devices=devices)
        matcher.match(a, b, stride=16)  # builds the graph
        start = time.perf_counter()
        m = matcher.match(a, b, stride=8)
        times[devices] = time.perf_counter() - start
        matcher.close()
        if devices == 1:
            reference = m.p1
        else:
            same = np.allclose(m.p1, reference, atol=1e-5)
    print("\n| matching, sample pair, stride 8, one level | seconds | vs one device |")
    print("|---|---|---|")
    print("| one device | %.1f | 1.00x |" % times[1])
    print("| 2 virtual CPU devices | %.1f | %.2fx (same matches: %s) |"
          % (times[2], times[1] / times[2], same))


if __name__ == "__main__":
    main()
