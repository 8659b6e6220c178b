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

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vidcorr.evaluate import run_evaluation  # noqa: E402
from vidcorr.errors import run_cli  # noqa: E402
from vidcorr.peers import PEERS  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", action="append", default=[],
                        help="run directory or checkpoint prefix, optionally LABEL=PATH "
                             "(repeatable; default: the packaged model)")
    parser.add_argument("--untrained", type=float, action="append", default=[],
                        metavar="WIDTH", help="also score an untrained network of this width")
    parser.add_argument("--pairs", default="motorcycle,grove3",
                        help="built-in pairs, comma-separated ('' for none)")
    parser.add_argument("--gt-pair", nargs=3, action="append", default=[],
                        metavar=("IMG1", "IMG2", "GT"), help="a pair with its ground truth")
    parser.add_argument("--gt-kind", choices=("flow", "disparity"),
                        help="ground-truth kind for --gt-pair (default: by file)")
    parser.add_argument("--gt-scale", type=float, help="disparity divisor (PNG default 256)")
    parser.add_argument("--methods", default=",".join(PEERS),
                        help="peers, comma-separated (default: %(default)s)")
    parser.add_argument("--stride", type=int, default=4, help="grid stride")
    parser.add_argument("--levels", default="",
                        help="pyramid levels of vidcorr's coarse-to-fine read-out; a comma list "
                             "(e.g. 1,3) scores each model at each (default: the Matcher's)")
    parser.add_argument("--width", type=int, default=384,
                        help="downscale pairs to this width (0: full size)")
    parser.add_argument("--config", help="data config for the interpolation scores "
                                         "(default: the first checkpoint's run config)")
    parser.add_argument("--no-interpolation", action="store_true",
                        help="skip the middle-frame PSNR/SSIM scores")
    parser.add_argument("--out", default="evaluation/eval", help="output prefix")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        levels = tuple(int(n) for n in args.levels.split(",") if n.strip()) or (None,)
    except ValueError:
        parser.error("--levels: expected integers like 3 or 1,3, got %r" % args.levels)
    code, text = run_cli(lambda: run_evaluation(
            checkpoints=args.checkpoint, untrained=args.untrained,
            builtin=[p for p in args.pairs.split(",") if p.strip()], gt_pairs=args.gt_pair,
            gt_kind=args.gt_kind, gt_scale=args.gt_scale,
            methods=[m for m in args.methods.split(",") if m.strip()], stride=args.stride,
            width=args.width, data_config=args.config,
            interpolation=not args.no_interpolation, out=args.out,
            progress=not args.no_progress, levels=levels))
    if code:
        return code
    print(text)
    print("wrote %s.md, %s.json and %s.png" % (args.out, args.out, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
