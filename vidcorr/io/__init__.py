"""Files: video and image reading (``video``), flow files (``flowio``), match pictures
(``visualize``) and checkpoints of run directories (``checkpoints``).
"""
