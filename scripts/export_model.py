"""Export a trained run as a model folder with a card (e.g. the packaged default model).

  python scripts/export_model.py --run runs/cpu_small --out vidcorr/models/default \
      [--evaluation evaluation/default.json] [--notes "..."]
"""

import sys

from vidcorr.cli import export_main

if __name__ == "__main__":
    sys.exit(export_main())
