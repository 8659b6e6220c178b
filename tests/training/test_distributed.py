"""Multi-worker training: a parameter server and two workers as local processes."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from vidcorr.io import rundir
from vidcorr.training.distributed import free_ports
from vidcorr.training.distributed import read_cluster
from vidcorr.errors import UserError

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TIMEOUT = 240


def test_read_cluster(tmp_path):
    cluster = {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(cluster))
    assert read_cluster(str(path), "worker", 1, environ={}) == (cluster, "worker", 1)
    env = {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "ps", "index": 0}})}
    assert read_cluster(environ=env) == (cluster, "ps", 0)
    assert read_cluster(environ=env, job_name="worker", task_index=1)[1:] == ("worker", 1)
    with pytest.raises(UserError, match="no cluster"):
        read_cluster(environ={})
    with pytest.raises(UserError, match="task-index must be from 0 to 1"):
        read_cluster(str(path), "worker", 2, environ={})
    path.write_text(json.dumps({"worker": ["a:1"]}))
    with pytest.raises(UserError, match="no 'ps' job"):
        read_cluster(str(path), "worker", 0, environ={})
    with pytest.raises(UserError, match="TF_CONFIG"):
        read_cluster(environ={"TF_CONFIG": "{"})


class _Cluster(object):
    """One ps and two workers of scripts/train.py on local ports; always cleaned up."""

    def __init__(self, tmp_path, steps):
        ports = free_ports(3)
        self.cluster = str(tmp_path / "cluster.json")
        with open(self.cluster, "w") as f:
            json.dump({"ps": ["127.0.0.1:%d" % ports[0]],
                       "worker": ["127.0.0.1:%d" % p for p in ports[1:]]}, f)
        with open(os.path.join(ROOT, "configs", "tiny_test.json")) as f:
            config = json.load(f)
        config["model"]["width"] = 0.125
        config["data"].update(crop_width=32, val_triplets=8)
        config["train"].update(steps=steps, checkpoint_every=4, validate_every=1000,
                               summary_every=1000, batch_size=4)
        self.config = str(tmp_path / "config.json")
        with open(self.config, "w") as f:
            json.dump(config, f)
        self.run_dir = str(tmp_path / "run")
        self.tmp_path = tmp_path
        self.procs = {}

    def start(self, job, index):
        log = open(str(self.tmp_path / ("%s%d.log" % (job, index))), "a")
        self.procs[(job, index)] = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "scripts", "train.py"), "--config", self.config,
             "--cluster", self.cluster, "--job-name", job, "--task-index", str(index),
             "--run-dir", self.run_dir, "--no-progress"], stdout=log, stderr=log)
        log.close()
        return self.procs[(job, index)]

    def log(self, job, index):
        with open(str(self.tmp_path / ("%s%d.log" % (job, index)))) as f:
            return f.read()

    def close(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def _wait(proc, deadline):
    return proc.wait(timeout=max(1, deadline - time.time()))


def test_two_workers_train_a_killed_worker_rejoins_and_the_checkpoint_restores(tmp_path):
    from vidcorr.readout.matching import Matcher

    steps = 16
    c = _Cluster(tmp_path, steps=steps)
    try:
        c.start("ps", 0)
        chief, worker = c.start("worker", 0), c.start("worker", 1)
        deadline = time.time() + TIMEOUT
        while time.time() < deadline and not os.path.isfile(os.path.join(c.run_dir,
                                                                       "checkpoint")):
            assert chief.poll() is None, c.log("worker", 0)
            time.sleep(0.2)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        killed_at = rundir.checkpoint_step(rundir.find_checkpoint(c.run_dir))
        assert 4 <= killed_at < steps
        time.sleep(2)
        worker = c.start("worker", 1)  # the same command again
        assert _wait(chief, deadline) == 0, c.log("worker", 0)
        assert _wait(worker, deadline) == 0, c.log("worker", 1)
    finally:
        c.close()
    assert c.log("worker", 1).count("waiting for the chief's variables") == 2
    assert "done: step %d (the chief saves and validates)" % steps in c.log("worker", 1)
    prefix = rundir.find_checkpoint(c.run_dir)
    assert rundir.checkpoint_step(prefix) == steps  # synchronous updates of both workers
    saved = sorted(int(n[len("model.ckpt-"):-len(".index")]) for n in os.listdir(c.run_dir)
                   if n.endswith(".index"))
    # the chief saves when its view of the global step crosses a multiple of 4 (another
    # worker's update can move it by two between the chief's own steps)
    assert saved[-1] == steps and all(b - a >= 3 for a, b in zip(saved, saved[1:])), saved
    matcher = Matcher(c.run_dir, levels=1)  # a single-process Matcher reads it
    m = matcher.match(np.random.RandomState(0).rand(32, 64, 3), np.random.RandomState(1).rand(
        32, 64, 3), stride=16)
    matcher.close()
    assert len(m) == 8 and np.all(np.isfinite(m.p1))
