"""Correspondences from a trained model: the folded inference graph (``inference``), the
exact sensitivity read-out (``gradients`` over ``backward``, ``windows``, ``transpose`` and the
``memory`` model), the coarse-to-fine ``pyramid``, ``confidence``, the cost ``budget`` and
:class:`~vidcorr.readout.matching.Matcher`, the public entry point.
"""
