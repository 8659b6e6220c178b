"""``python scripts/correspond.py``: the program ``vidcorr-correspond``
(:func:`vidcorr.apps.cli.correspond_main`; ``--help`` lists its arguments)."""

import sys

from vidcorr.apps.cli import correspond_main

if __name__ == "__main__":
    sys.exit(correspond_main())
