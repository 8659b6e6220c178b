"""The exact sensitivity read-out: each grid point's gradient with respect to both frames.

``gradients`` (:class:`~vidcorr.readout.sensitivity.gradients.SensitivityGraph`) evaluates the
reduced sensitivities of many points in batched passes over ``backward``, ``windows``,
``transpose`` and the ``memory`` model; ``subpixel`` refines the peaks; ``readout`` runs it
coarse to fine on the host, the read-out the registry finds as ``sensitivity``.
"""
