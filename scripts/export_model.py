"""Export a trained run as a model folder with a card (e.g. the packaged default model).

  python scripts/export_model.py --run runs/cpu_small --out vidcorr/models/default \
      [--evaluation evaluation/default.json] [--notes "..."]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vidcorr.errors import run_cli  # noqa: E402
from vidcorr.export import export_model  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", required=True, help="run directory or checkpoint prefix")
    parser.add_argument("--out", required=True, help="model folder to write")
    parser.add_argument("--evaluation", help="evaluate.py JSON report to put in the card")
    parser.add_argument("--notes", default="", help="free text for the card")
    parser.add_argument("--no-interpolation", action="store_true",
                        help="do not measure validation PSNR/SSIM for the card")
    args = parser.parse_args(argv)
    code, _ = run_cli(lambda: export_model(args.run, args.out, args.evaluation, args.notes,
                                           interpolation=not args.no_interpolation))
    return code


if __name__ == "__main__":
    sys.exit(main())
