"""The network and what defines it: hyper-parameters and layer plan (``spec``), training
configs (``config``), layers, batch norm, the quantize switch, the kernel head, MIND itself and
the reconstruction losses. Everything else builds on this sub-package; it imports nothing of
vidcorr but ``compat`` and ``errors``.
"""
