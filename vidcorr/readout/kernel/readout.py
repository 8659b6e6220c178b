"""The ``kernel`` read-out: every pixel's match from the blend weights, one graph per size.

For each image size the matcher meets, :class:`KernelReadOut` builds one
:class:`vidcorr.readout.kernel.graph.MatchGraph` (cached) and reads a batch of
pairs with one ``sess.run``; the host only picks the grid's points out of the
dense result.
"""

import numpy as np

from vidcorr.model.spec import layer_plan, plan_flops
from vidcorr.readout.kernel.graph import MatchGraph
from vidcorr.readout.registry import ReadOut

__all__ = ["KernelReadOut", "SECONDS_PER_FORWARD_GFLOP"]

SECONDS_PER_FORWARD_GFLOP = 0.012  # a level's pass on the project's CPU, its warps included


class KernelReadOut(ReadOut):
    """The blend-weight read-out (see the module docstring)."""

    def __init__(self, matcher):
        super(KernelReadOut, self).__init__(matcher)
        self._graphs = {}

    @classmethod
    def refusal(cls, spec):
        if not spec.kernel_size:
            return ("needs a network with a kernel head (model.kernel_size > 0); this one "
                    "synthesises its output directly: use readout 'sensitivity'")
        return None

    @classmethod
    def level_cost(cls, spec, level, options):
        from vidcorr.readout.sensitivity.memory import forward_bytes

        gflop = plan_flops(layer_plan(spec, level.height, level.width), spec.kernel_size) / 1e9
        return (options.passes * gflop * SECONDS_PER_FORWARD_GFLOP,
                forward_bytes(spec, level.height, level.width) / 2.0 ** 20)

    def graph_for(self, height, width):
        """The cached :class:`MatchGraph` for an image size (built on first use)."""
        m = self.matcher
        return m.built(self._graphs, (height, width, m.options), lambda: MatchGraph(
            m.spec, height, width, m.weights, m.options, m.device, m.threads))

    def read_out(self, pairs, points, stride, progress=False, desc="pixels"):
        h, w = pairs[0][0].shape[:2]
        res = self.graph_for(h, w).run(np.stack([a for a, _ in pairs]),
                                       np.stack([b for _, b in pairs]))
        gx, gy = points[:, 0], points[:, 1]
        return (res["position"][:, gy, gx].astype(np.float64), res["peak"][:, gy, gx],
                res["confidence"][:, gy, gx].astype(np.float64))

    def close(self):
        for graph in self._graphs.values():
            graph.close()
        self._graphs.clear()
