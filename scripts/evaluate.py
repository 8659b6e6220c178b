"""Evaluate matches against ground truth, side by side with classic matchers.

  python scripts/evaluate.py [--checkpoint RUN ...] [--untrained 0.25] [--pairs motorcycle,grove3]
  python scripts/evaluate.py --checkpoint RUN --gt-pair IMG1 IMG2 GROUND_TRUTH [--gt-kind disparity]

Each pair is downscaled to --width columns (384; the ground truth scaled with
it). vidcorr and the dense peers are scored at the same grid points (--stride),
SIFT on its own keypoints. With a trained checkpoint (or --config), the
network's middle frame is also scored on held-out triplets of its data config
against the frame average and DIS midpoint warping. Writes OUT.md, OUT.json and
OUT.png. The peers need the eval extra: pip install -e .[eval]
"""

import sys

from vidcorr.cli import evaluate_main

if __name__ == "__main__":
    sys.exit(evaluate_main())
