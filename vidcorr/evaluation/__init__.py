"""Scoring matches against ground truth: the evaluation pairs (``groundtruth``), the
metrics, OpenCV's peers (``peers``) and the whole evaluation (``evaluate``).
"""
