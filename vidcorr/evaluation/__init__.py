"""Scoring matches against ground truth: the evaluation pairs (``groundtruth``), the
metrics, OpenCV's peers (``peers``) and the whole evaluation (``evaluate``); ``guard``
scores a model against its source on layered pairs with known motion before adaptation
writes it.
"""
