"""Training on video: triplets from video and frame folders (``data``, ``layered``,
``synthetic``), the :class:`~vidcorr.training.trainer.Trainer` loop, towers over several devices
(``towers``) and TensorFlow's distributed runtime (``distributed``).
"""
