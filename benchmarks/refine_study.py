"""The study that chose the refinement's settings: variants of ``MatchOptions`` scored on
the evaluation pairs, with the read-out's time.

Each variant is a JSON object of ``MatchOptions`` fields over the defaults; every variant
matches both pairs (at ``--width`` columns, ``--stride``) twice and the second run is
timed, so the graphs are built and warm. It prints one markdown row per pair and variant.

    python benchmarks/refine_study.py                         # the variants below
    python benchmarks/refine_study.py --variants '{"g5": {"refine_gamma": 5}}'

Needs the eval extra (the evaluation pairs): ``pip install -e .[eval]``.
"""

import argparse
import json

VARIANTS = {
    "no refinement": {"refine": "none"},
    "default": {},
    "rounds 1, iterations 6": {"refine_rounds": 1, "refine_iterations": 6},
    "iterations 4": {"refine_iterations": 4},
    "iterations 4, gamma 5": {"refine_iterations": 4, "refine_gamma": 5.0},
    "sweeps 2": {"refine_sweeps": 2},
    "alpha 5": {"refine_alpha": 5.0},
    "alpha 20": {"refine_alpha": 20.0},
    "delta 10": {"refine_delta": 10.0},
    "gamma 5": {"refine_gamma": 5.0},
    "no residual term": {"residual_scale": 0.0},
    "residual scale 0.01": {"residual_scale": 0.01},
    "residual scale 0.05": {"residual_scale": 0.05},
}
COLUMNS = ("acc@1", "acc@2", "acc@5", "acc@1/25%", "acc@5/25%", "median_epe", "matches",
           "seconds")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", help="JSON {label: {option: value}} (default: the study's)")
    parser.add_argument("--pairs", default="motorcycle,grove3")
    parser.add_argument("--width", type=int, default=384, help="0: full size")
    parser.add_argument("--stride", type=int, default=8)
    args = parser.parse_args()
    from vidcorr.evaluation.evaluate import evaluate_matching
    from vidcorr.evaluation.groundtruth import builtin_pair
    from vidcorr.readout.matching import Matcher

    variants = json.loads(args.variants) if args.variants else VARIANTS
    pairs = [builtin_pair(name) for name in args.pairs.split(",")]
    models = {label: Matcher(**settings) for label, settings in variants.items()}
    quiet = lambda *a: None  # noqa: E731
    evaluate_matching(pairs, models, methods=[], stride=args.stride, width=args.width, log=quiet)
    rows, _ = evaluate_matching(pairs, models, methods=[], stride=args.stride, width=args.width,
                                log=quiet)
    print("| pair | variant | " + " | ".join(COLUMNS) + " |")
    print("|---|---|" + "---|" * len(COLUMNS))
    for row in rows:
        cells = [("%d" if c == "matches" else "%.2f" if c in ("median_epe", "seconds")
                  else "%.3f") % row[c] for c in COLUMNS]
        print("| %s | %s | %s |" % (row["pair"], row["method"], " | ".join(cells)))
    for matcher in models.values():
        matcher.close()


if __name__ == "__main__":
    main()
