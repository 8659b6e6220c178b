"""Train the MIND interpolation network: python scripts/train.py --config configs/X.json"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vidcorr.config import load_config  # noqa: E402
from vidcorr.errors import UserError, run_cli  # noqa: E402
from vidcorr.training import Trainer, TrainingDiverged  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="JSON config file")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in train.run_dir from its latest checkpoint")
    parser.add_argument("--run-dir", help="override train.run_dir")
    parser.add_argument("--steps", type=int, help="override train.steps")
    parser.add_argument("--init-from", help="override train.init_from (checkpoint or run dir)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    def work():
        config = load_config(args.config)
        overrides = {k: v for k, v in (("run_dir", args.run_dir), ("steps", args.steps),
                                       ("init_from", args.init_from)) if v is not None}
        if overrides:
            config = config.replace(train=overrides)
        return Trainer(config, resume=args.resume, progress=not args.no_progress).run()

    code, results = run_cli(work, errors=(UserError, TrainingDiverged),
                            interrupted="interrupted before training started; nothing was saved")
    if code:
        return code
    print("done: step %d, validation PSNR %.2f dB vs frame average %.2f dB, checkpoint %s"
          % (results["step"], results["val_psnr"], results["baseline_psnr"],
             results["checkpoint"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
