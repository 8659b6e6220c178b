"""Multi-worker training on TensorFlow's distributed runtime (between-graph replication).

A cluster has a ``ps`` job (parameter servers: they hold the variables) and a
``worker`` job; every process runs ``scripts/train.py`` with the same config
and cluster and its own ``--job-name``/``--task-index`` (or ``TF_CONFIG``).

* A parameter server starts a ``tf.train.Server`` and serves until killed.
* Every worker builds the whole training graph under
  ``tf.train.replica_device_setter`` (variables round-robin on the ``ps``
  tasks, computation on the worker), with Adam wrapped in
  ``tf.train.SyncReplicasOptimizer``: each global step averages one gradient
  from every worker (``replicas_to_aggregate`` = the number of workers), so
  ``train.steps`` counts synchronous updates of ``workers x batch_size``
  triplets, and stale gradients of a restarted worker are dropped.
* Worker 0 is the chief: it initialises (or restores, with ``--resume``) the
  variables, runs the optimizer's token queue, and alone writes checkpoints,
  summaries and validation into ``train.run_dir``. The checkpoint has the same
  variable names as a single-process run's (plus none: the optimizer's
  accumulators are not saved), so ``Matcher``, export and single-process
  ``--resume`` read it.
* Other workers wait for the chief's variables (``tf.train.SessionManager``)
  and train; a worker that is killed and started again rejoins at the current
  global step (sessions are filtered to their own worker and the ``ps`` tasks,
  so none waits for a missing worker; while one is down the others go on, each
  update still averaging ``replicas_to_aggregate`` gradients from those up). Each worker draws different triplets (the seed plus its index).

The cluster is a JSON file ``{"ps": ["host:port", ...], "worker": [...]}``
(``--cluster``) or the ``TF_CONFIG`` environment variable
``{"cluster": {...}, "task": {"type": "worker", "index": 0}}``.
"""

import json
import os

from vidcorr.compat import TF1, session_config, tf
from vidcorr.errors import UserError
from vidcorr.training.trainer import Trainer

__all__ = ["read_cluster", "run_parameter_server", "DistributedTrainer", "STEP_TIMEOUT_S",
           "free_ports"]

STEP_TIMEOUT_S = 20.0  # a worker whose step waits this long checks whether the run ended


def free_ports(n, host="127.0.0.1"):
    """``n`` distinct TCP ports free on ``host`` right now: a cluster of ``n`` tasks on one
    machine (tests, benchmarks, trying ``--cluster`` out). A port can be taken again
    before it is used, so use them at once.

    Args:
      n: how many ports.
      host: the address to bind (loopback by default).

    Returns:
      A list of ``n`` port numbers.
    """
    import socket
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind((host, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def read_cluster(cluster_file=None, job_name=None, task_index=None, environ=None):
    """The cluster and this process's task from ``--cluster`` or ``TF_CONFIG``.

    Args:
      cluster_file: path of a JSON file ``{"ps": [...], "worker": [...]}``, or None
        to read ``TF_CONFIG``.
      job_name: ``"ps"`` or ``"worker"`` (overrides ``TF_CONFIG``'s task type).
      task_index: the task's index in its job (overrides ``TF_CONFIG``'s).
      environ: the environment (default ``os.environ``).

    Returns:
      ``(cluster dict, job_name, task_index)``.

    Raises:
      UserError: for a missing or malformed cluster or task.
    """
    environ = os.environ if environ is None else environ
    task = {}
    if cluster_file:
        try:
            with open(cluster_file) as f:
                cluster = json.load(f)
        except (OSError, ValueError) as err:
            raise UserError("cannot read cluster file %s: %s" % (cluster_file, err))
        origin = cluster_file
    elif environ.get("TF_CONFIG"):
        try:
            config = json.loads(environ["TF_CONFIG"])
            cluster, task = config["cluster"], config.get("task", {})
        except (ValueError, KeyError, TypeError) as err:
            raise UserError("TF_CONFIG is not {\"cluster\": {...}, \"task\": {...}}: %s" % err)
        origin = "TF_CONFIG"
    else:
        raise UserError("no cluster: pass --cluster FILE or set TF_CONFIG")
    job_name = job_name or task.get("type")
    task_index = task.get("index") if task_index is None else task_index
    if not isinstance(cluster, dict) or not all(
            isinstance(v, list) and v and all(isinstance(a, str) for a in v)
            for v in cluster.values()):
        raise UserError("%s: the cluster must map job names to lists of \"host:port\"" % origin)
    for job in ("ps", "worker"):
        if job not in cluster:
            raise UserError("%s: the cluster has no %r job (it needs ps and worker)"
                            % (origin, job))
    if job_name not in ("ps", "worker"):
        raise UserError("--job-name must be 'ps' or 'worker', got %r" % (job_name,))
    if not isinstance(task_index, int) or not 0 <= task_index < len(cluster[job_name]):
        raise UserError("--task-index must be from 0 to %d for job %s, got %r"
                        % (len(cluster[job_name]) - 1, job_name, task_index))
    return {k: list(v) for k, v in cluster.items()}, job_name, task_index


def run_parameter_server(cluster, task_index, log=print):
    """Serves this ``ps`` task's variables until the process is killed."""
    server = tf.train.Server(tf.train.ClusterSpec(cluster), job_name="ps",
                             task_index=task_index, config=session_config())
    log("parameter server %d listening on %s" % (task_index, cluster["ps"][task_index]))
    server.join()


class DistributedTrainer(Trainer):
    """A :class:`vidcorr.training.trainer.Trainer` as one worker of a cluster.

    Args:
      config: the config (``train.num_devices`` must be 1: one tower per worker).
      cluster: ``{"ps": [...], "worker": [...]}``.
      task_index: this worker's index; 0 is the chief.
      resume: as for :class:`Trainer` (the chief's run directory).
      log: callable taking a message line.
      progress: show a progress bar.

    Raises:
      UserError: for towers within a worker.
    """

    def __init__(self, config, cluster, task_index, resume=False, log=None, progress=True):
        if config.train.num_devices != 1:
            raise UserError("train.num_devices must be 1 with a cluster (one tower per worker)")
        super(DistributedTrainer, self).__init__(config, resume, log, progress)
        self.cluster = tf.train.ClusterSpec(cluster)
        self.task_index = task_index
        self.num_workers = len(cluster["worker"])
        self.server = tf.train.Server(self.cluster, job_name="worker", task_index=task_index,
                                      config=session_config(config.train.threads))
        self._threads, self._coord = [], None
        self.hard_exit = False

    def _placement(self):
        return tf.device(tf.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % self.task_index, cluster=self.cluster))

    def _optimizer(self, optimizer):
        self.sync = tf.train.SyncReplicasOptimizer(optimizer,
                                                   replicas_to_aggregate=self.num_workers,
                                                   total_num_replicas=self.num_workers)
        return self.sync

    def _start_session(self, latest, start_step, init_prefix):
        manager = tf.train.SessionManager(
            local_init_op=self.sync.local_step_init_op,
            ready_op=tf.report_uninitialized_variables(),
            ready_for_local_init_op=self.sync.ready_for_local_init_op,
            graph=self.graph, recovery_wait_secs=1)
        config = session_config(self.config.train.threads)
        # Only this worker and the parameter servers: a session must not wait for
        # other workers (a restarted worker joins whether or not the others are up).
        config.device_filters.extend(["/job:ps", "/job:worker/task:%d" % self.task_index])
        if not self.is_chief:
            self.log("worker %d: waiting for the chief's variables" % self.task_index)
            self.sess = manager.wait_for_session(self.server.target, config=config)
            return
        init_fn = (lambda sess: self._init_from(sess, init_prefix)) if init_prefix else None
        self.sess = manager.prepare_session(
            self.server.target, init_op=tf.global_variables_initializer(), saver=self.saver,
            checkpoint_filename_with_path=latest, config=config, init_fn=init_fn)
        if latest:
            self.log("resumed %s at step %d" % (latest, start_step))
            self._recover_checkpoints()
        self.sess.run(self.sync.get_init_tokens_op())
        self._coord = tf.train.Coordinator()
        self._threads = self.sync.get_chief_queue_runner().create_threads(
            self.sess, coord=self._coord, daemon=True, start=True)

    def _run_step(self, fetches):
        """The step, then the global step; None once the run has ended without us."""
        options = tf.RunOptions(timeout_in_ms=int(STEP_TIMEOUT_S * 1000))
        while True:
            try:
                out = self.sess.run(fetches, options=options)
                return out, int(self.sess.run(self.global_step))
            except (tf.errors.DeadlineExceededError, tf.errors.UnavailableError,
                    tf.errors.AbortedError, tf.errors.CancelledError):
                try:
                    step = int(self.sess.run(self.global_step, options=options))
                except tf.errors.OpError:
                    return None, self.step  # the parameter servers are gone
                if step >= self.config.train.steps or self._stop_signal is not None:
                    return None, step  # the others finished (or we are asked to stop)
                self.log("worker %d: step waited %g s for the other workers; waiting on"
                         % (self.task_index, STEP_TIMEOUT_S))

    def close(self):
        """Stops the chief's token runner and closes the session.

        On TensorFlow 1.15 the chief's session cannot be closed: ``close`` (and
        ``tf.Session.reset``) wait for the token runner, which is blocked on the
        gradient accumulators once the other workers have stopped. The session is
        then left open, ``self.hard_exit`` is set, and the caller should end the
        process with ``os._exit`` (``scripts/train.py`` does) once all is saved.
        """
        if self._coord is not None:
            self._coord.request_stop()
            self._coord.join(self._threads, stop_grace_period_secs=2, ignore_live_threads=True)
            self._coord = None
            if TF1 and self.sess is not None:
                self._leaked = self.sess  # keep it referenced: its destructor would block too
                self.sess = None
                self.hard_exit = True
        super(DistributedTrainer, self).close()
