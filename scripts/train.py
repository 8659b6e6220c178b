"""``python scripts/train.py``: the program ``vidcorr-train``
(:func:`vidcorr.apps.cli.train_main`; ``--help`` lists its arguments)."""

import sys

from vidcorr.apps.cli import train_main

if __name__ == "__main__":
    sys.exit(train_main())
