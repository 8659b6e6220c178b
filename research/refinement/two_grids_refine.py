"""``research/tracks/pair_error.py`` with the refinement's frames read on two grids.

With ``TWO_GRID=1`` the refinement's sampler (``vidcorr.readout.refinement.frame_sampler``,
patched here, not in the package) reads every frame at the match positions moved by
(-OFF, -OFF) and by (+OFF, +OFF) px (``OFF``, default 0.25: two grids half a pixel apart,
centred on the pixel) and stacks the two as channels, so each pixel's data terms are the
two grids' sum (``two_grids.py`` found that this cancels most of a sampler's bias in the
least-squares minimum). The residual confidence reads the same way. Without it, the
script is ``pair_error.py``.

    TWO_GRID=0 python research/refinement/two_grids_refine.py
    TWO_GRID=1 python research/refinement/two_grids_refine.py
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tracks"))

from vidcorr.compat import tf  # noqa: E402
from vidcorr.model.sampling import sampler as one_grid  # noqa: E402
import vidcorr.readout.refinement as refinement  # noqa: E402

OFF = float(os.environ.get("OFF", "0.25"))


def two_grids(name):
    """The sampler ``name``'s (prepare, sample), its samples on two grids as channels."""
    prepare, sample = one_grid(name)

    def sample2(images, x, y):
        return tf.concat([sample(images, x - OFF, y - OFF), sample(images, x + OFF, y + OFF)],
                         axis=3)  # [B, H, W, 2C]
    return prepare, sample2


if __name__ == "__main__":
    if os.environ.get("TWO_GRID") == "1":
        refinement.frame_sampler = two_grids
    import pair_error  # noqa: E402

    pair_error.main()
