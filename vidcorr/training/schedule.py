"""The learning-rate schedule of a training run, as a tensor of the global step.

``train.lr_schedule`` picks one of three (``vidcorr.model.config.TrainConfig``):

* ``cosine`` (the default): from ``learning_rate`` down to ``min_lr_ratio`` times it over
  ``train.steps``;
* ``exponential``: multiplied by ``lr_decay_rate`` every ``lr_decay_steps`` (staircase);
* ``constant``.
"""

from vidcorr.compat import tf

__all__ = ["learning_rate"]


def learning_rate(train_config, global_step):
    """The learning rate as a tensor.

    Args:
      train_config: a :class:`vidcorr.model.config.TrainConfig`.
      global_step: the run's global step tensor.

    Returns:
      A scalar float tensor.
    """
    t = train_config
    if t.lr_schedule == "constant":
        return tf.constant(t.learning_rate)
    if t.lr_schedule == "exponential":
        return tf.train.exponential_decay(t.learning_rate, global_step, t.lr_decay_steps,
                                          t.lr_decay_rate, staircase=True)
    return tf.train.cosine_decay(t.learning_rate, global_step, t.steps, alpha=t.min_lr_ratio)
