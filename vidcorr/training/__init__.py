"""Training on video: triplets from video and frame folders (``data``, ``layered``,
``synthetic``), the :class:`~vidcorr.training.trainer.Trainer` loop and its learning-rate
schedule (``schedule``), a new run's starting point (``initial``: ``train.init_from``,
widened or not), towers over several devices (``towers``) and TensorFlow's distributed
runtime (``distributed``).
"""
