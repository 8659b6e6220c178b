"""``python scripts/correspond.py``: the program ``vidcorr-correspond``
(:func:`vidcorr.cli.correspond_main`; ``--help`` lists its arguments)."""

import sys

from vidcorr.cli import correspond_main

if __name__ == "__main__":
    sys.exit(correspond_main())
