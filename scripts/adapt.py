"""``python scripts/adapt.py``: the program ``vidcorr-adapt``
(:func:`vidcorr.apps.cli.adapt_main`; ``--help`` lists its arguments)."""

import sys

from vidcorr.apps.cli import adapt_main

if __name__ == "__main__":
    sys.exit(adapt_main())
