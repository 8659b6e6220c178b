"""``python scripts/evaluate.py``: the program ``vidcorr-evaluate``
(:func:`vidcorr.apps.cli.evaluate_main`; ``--help`` lists its arguments)."""

import sys

from vidcorr.apps.cli import evaluate_main

if __name__ == "__main__":
    sys.exit(evaluate_main())
