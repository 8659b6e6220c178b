"""Train the MIND interpolation network: python scripts/train.py --config configs/X.json"""

import sys

from vidcorr.cli import train_main

if __name__ == "__main__":
    sys.exit(train_main())
