"""The blend-weight read-out: the whole match in one graph per image size.

``blend`` builds one level (warp, network, blend moments, unwarp), ``resample`` the
pyramid's resampling, ``smoothing`` the fields a level hands on, ``texture`` the
confidence's texture term, ``graph`` the whole match (:class:`~vidcorr.readout.kernel.graph.MatchGraph`),
and ``readout`` the read-out the registry finds as ``kernel``.
"""
