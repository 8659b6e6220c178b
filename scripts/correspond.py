"""Find matches between frames with a trained MIND network.

  python scripts/correspond.py FRAME_T FRAME_T2 [--checkpoint RUN] [--out DIR]
  python scripts/correspond.py --pairs LIST.txt      (one "frame_t frame_t2" per line)
  python scripts/correspond.py --frames DIR --gap 2  (consecutive frames of a folder)
  python scripts/correspond.py --video FILE --start 100 --count 3 --gap 2

Per pair it writes NAME.npz, NAME.txt (a table), NAME.flo and NAME_kitti.png
(sparse flow t -> t+2) and NAME.png (a picture) into the output folder.
"""

import sys

from vidcorr.cli import correspond_main

if __name__ == "__main__":
    sys.exit(correspond_main())
