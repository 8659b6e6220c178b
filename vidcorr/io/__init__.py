"""Files: video and image reading (``video``), flow files (``flowio``), match pictures
(``visualize``), atomic writes with the user's permissions (``files``) and run
directories: config, checkpoints and the run lock (``rundir``).
"""
