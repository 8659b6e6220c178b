"""``python scripts/export_model.py``: the program ``vidcorr-export``
(:func:`vidcorr.apps.cli.export_main`; ``--help`` lists its arguments)."""

import sys

from vidcorr.apps.cli import export_main

if __name__ == "__main__":
    sys.exit(export_main())
