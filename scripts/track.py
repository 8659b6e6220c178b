"""``python scripts/track.py``: the program ``vidcorr-track``
(:func:`vidcorr.apps.cli_track.track_main`; ``--help`` lists its arguments)."""

import sys

from vidcorr.apps.cli_track import track_main

if __name__ == "__main__":
    sys.exit(track_main())
