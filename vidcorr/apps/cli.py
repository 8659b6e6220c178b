"""The command-line programs: ``vidcorr-train``, ``vidcorr-correspond``, ``vidcorr-evaluate``,
``vidcorr-export`` and ``vidcorr-adapt`` (console entry points), also run as
``python scripts/X.py``.

Each parses its arguments, calls the library and turns user errors into one
line and an exit code (:func:`vidcorr.errors.run_cli`). TensorFlow is imported
only after the arguments are parsed, inside :func:`vidcorr.quiet.quiet_stderr`,
so its native start-up lines are not shown unless ``--verbose`` is given.
"""

import argparse
import inspect
import os
import sys

from vidcorr.apps.cli_match import add_match_arguments, match_options
from vidcorr.readout import registry
from vidcorr.errors import UserError, run_cli
from vidcorr.evaluation.peers import PEERS
from vidcorr.readout.options import REFINE_METHODS
from vidcorr.readout.pyramid import DEFAULT_STRIDE
from vidcorr.quiet import quiet_stderr

__all__ = ["train_main", "correspond_main", "evaluate_main", "export_main", "adapt_main"]


def train_main(argv=None):
    """Train the MIND interpolation network: python scripts/train.py --config configs/X.json"""
    parser = argparse.ArgumentParser(description=inspect.cleandoc(train_main.__doc__))
    parser.add_argument("--config", required=True, help="JSON config file")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in train.run_dir from its latest checkpoint")
    parser.add_argument("--run-dir", help="override train.run_dir")
    parser.add_argument("--steps", type=int, help="override train.steps")
    parser.add_argument("--init-from", help="override train.init_from (checkpoint or run dir)")
    parser.add_argument("--devices", type=int,
                        help="override train.num_devices: data-parallel towers, one per GPU "
                             "(or per virtual CPU device without GPUs)")
    parser.add_argument("--cluster", help="JSON file {\"ps\": [...], \"worker\": [...]} of "
                                          "host:port (or set TF_CONFIG): multi-worker training")
    parser.add_argument("--job-name", choices=("ps", "worker"), help="this process's job")
    parser.add_argument("--task-index", type=int, help="this process's index in its job")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's start-up log")
    args = parser.parse_args(argv)
    args.hard_exit = False
    with quiet_stderr(not args.verbose):
        code = _train(args)
    if args.hard_exit:  # a TF 1.15 chief whose session cannot close (vidcorr.training.distributed)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _train(args):
    from vidcorr.model.config import load_config
    from vidcorr.training.trainer import Trainer, TrainingDiverged

    def work():
        distributed = args.cluster or args.job_name or os.environ.get("TF_CONFIG")
        if distributed:
            from vidcorr.training.distributed import (DistributedTrainer, read_cluster,
                                             run_parameter_server)
            cluster, job, index = read_cluster(args.cluster, args.job_name, args.task_index)
        config = load_config(args.config)
        overrides = {k: v for k, v in (("run_dir", args.run_dir), ("steps", args.steps),
                                       ("init_from", args.init_from),
                                       ("num_devices", args.devices)) if v is not None}
        if overrides:
            config = config.replace(train=overrides)
        if not distributed:
            return Trainer(config, resume=args.resume, progress=not args.no_progress).run()
        if job == "ps":
            run_parameter_server(cluster, index, log=lambda m: print(m, file=sys.stderr))
            return None
        trainer = DistributedTrainer(config, cluster, index, resume=args.resume,
                                     progress=not args.no_progress)
        try:
            return trainer.run()
        finally:
            args.hard_exit = trainer.hard_exit

    code, results = run_cli(work, errors=(UserError, TrainingDiverged),
                            interrupted="interrupted before training started; nothing was saved")
    if code or results is None:
        return code
    if results["interrupted"] and results.get("checkpoint") is None:
        print("worker interrupted at step %d (signal %d); start it again to rejoin"
              % (results["step"], results["signal"]), file=sys.stderr)
        return 128 + results["signal"]
    if results["interrupted"]:  # saved, but not finished: a scheduler must be able to tell
        print("interrupted at step %d (signal %d); saved %s; resume with --resume"
              % (results["step"], results["signal"], results["checkpoint"]), file=sys.stderr)
        return 128 + results["signal"]
    if results.get("checkpoint") is None:  # a worker other than the chief
        print("done: step %d (the chief saves and validates)" % results["step"])
        return 0
    print("done: step %d, validation PSNR %.2f dB vs frame average %.2f dB, checkpoint %s"
          % (results["step"], results["val_psnr"], results["baseline_psnr"],
             results["checkpoint"]))
    return 0



def _pair_arguments(parser):
    """correspond.py's pair sources: two images, a list, a frame folder or a video."""
    parser.add_argument("images", nargs="*", help="two images: frame t and frame t+2")
    parser.add_argument("--pairs", help="text file, one 'frame_t frame_t2' pair per line")
    parser.add_argument("--frames", help="folder of frames; pairs (i, i + gap)")
    parser.add_argument("--video", help="video file (or pkg:PACKAGE/path); pairs from --start")
    parser.add_argument("--start", type=int, default=0, help="first frame index for --video")
    parser.add_argument("--count", type=int, default=1, help="number of pairs from --video")
    parser.add_argument("--gap", type=int, default=2,
                        help="frame gap for --frames and --video (default 2)")
    parser.add_argument("--adapt", type=float, metavar="MINUTES",
                        help="with --video or --frames: first adapt the model to that footage "
                             "for MINUTES (vidcorr-adapt; the model is kept in OUT/"
                             "adapted_model), then match with it")


def correspond_main(argv=None):
    """Find matches between frames with a trained MIND network.

      python scripts/correspond.py FRAME_T FRAME_T2 [--checkpoint RUN] [--out DIR]
      python scripts/correspond.py --pairs LIST.txt      (one "frame_t frame_t2" per line)
      python scripts/correspond.py --frames DIR --gap 2  (consecutive frames of a folder)
      python scripts/correspond.py --video FILE --start 100 --count 3 --gap 2

    Per pair it writes NAME.npz, NAME.txt (a table), NAME.flo and NAME_kitti.png
    (sparse flow t -> t+2) and NAME.png (a picture) into the output folder."""
    parser = argparse.ArgumentParser(description=inspect.cleandoc(correspond_main.__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _pair_arguments(parser)
    parser.add_argument("--checkpoint", help="run directory or checkpoint prefix "
                                             "(default: the packaged model)")
    parser.add_argument("--stride", type=int, default=DEFAULT_STRIDE,
                        help="grid stride in pixels")
    parser.add_argument("--consistency", action="store_true",
                        help="keep only matches that agree with the swapped pair")
    parser.add_argument("--devices", type=int, default=1,
                        help="spread each read-out over N devices (GPUs, or virtual CPU "
                             "devices without them)")
    add_match_arguments(parser)
    parser.add_argument("--out", default="matches", help="output folder")
    parser.add_argument("--shard", help="K/N: match only every N-th pair from the K-th, so N "
                                        "processes or machines share a workload")
    parser.add_argument("--overwrite", action="store_true",
                        help="redo pairs whose outputs already exist (default: skip them)")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's start-up log")
    args = parser.parse_args(argv)
    options = match_options(parser, args)
    with quiet_stderr(not args.verbose):
        return _correspond(args, options)


def _correspond(args, options):
    from vidcorr.apps.correspond import correspond_pairs, list_pairs, parse_shard, shard_pairs

    def matcher():
        from vidcorr.readout.matching import Matcher
        return Matcher(args.checkpoint, options, devices=args.devices)

    def work():
        pairs = list_pairs(args.images, args.pairs, args.frames, args.gap, args.video,
                           args.start, args.count)
        if args.adapt is not None:  # the adapted model is the one that matches
            from vidcorr.apps.adapt import adapt_to_footage
            args.checkpoint = adapt_to_footage(
                args.video or args.frames, args.out, args.checkpoint, args.adapt,
                log=lambda m: print(m, file=sys.stderr), progress=not args.no_progress)
        if args.shard:
            pairs = shard_pairs(pairs, parse_shard(args.shard))
        return correspond_pairs(pairs, args.out, matcher, stride=args.stride,
                                consistency=args.consistency, progress=not args.no_progress,
                                overwrite=args.overwrite, log=lambda m: print(m, file=sys.stderr))

    code, results = run_cli(work, interrupted="interrupted: the pairs written so far are "
                                              "complete; rerun to do the rest")
    if code:
        return code
    failed = [r for r in results if r.error is not None]
    if failed and len(results) == 1:  # one pair: its error, as for any bad argument
        print("error: %s" % failed[0].error, file=sys.stderr)
        return 2
    for r in results:
        if r.error is None:
            print("%s: %d matches in %.1f s" % (r.name, r.valid, r.seconds))
    if failed:
        print("%d of %d pairs failed:" % (len(failed), len(results)), file=sys.stderr)
        for r in failed:
            print("  %s%s: %s" % (r.name, " (%s)" % r.origin if r.origin else "", r.error),
                  file=sys.stderr)
        return 1
    return 0



def evaluate_main(argv=None):
    """Evaluate matches against ground truth, side by side with classic matchers.

      vidcorr-evaluate [--checkpoint RUN ...] [--untrained 0.25] [--pairs motorcycle,grove3]
      vidcorr-evaluate --checkpoint RUN --gt-pair IMG1 IMG2 GROUND_TRUTH [--gt-kind disparity]

    Each pair is downscaled to --width columns (384; the ground truth scaled with
    it). vidcorr and the dense peers are scored at the same grid points (--stride),
    SIFT on its own keypoints. With a trained checkpoint (or --config), the
    network's middle frame is also scored on held-out triplets of its data config
    against the frame average and DIS midpoint warping. Writes OUT.md, OUT.json and
    OUT.png. The peers need the eval extra: pip install -e .[eval]"""
    parser = argparse.ArgumentParser(description=inspect.cleandoc(evaluate_main.__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", action="append", default=[],
                        help="run directory or checkpoint prefix, optionally LABEL=PATH "
                             "(repeatable; default: the packaged model)")
    parser.add_argument("--untrained", type=float, action="append", default=[],
                        metavar="WIDTH", help="also score an untrained network of this width")
    parser.add_argument("--pairs", default="motorcycle,grove3",
                        help="built-in pairs, comma-separated ('' for none)")
    parser.add_argument("--gt-pair", nargs=3, action="append", default=[],
                        metavar=("IMG1", "IMG2", "GT"), help="a pair with its ground truth")
    parser.add_argument("--gt-kind", choices=("flow", "disparity"),
                        help="ground-truth kind for --gt-pair (default: by file)")
    parser.add_argument("--gt-scale", type=float, help="disparity divisor (PNG default 256)")
    parser.add_argument("--methods", default=",".join(PEERS),
                        help="peers, comma-separated (default: %(default)s)")
    parser.add_argument("--stride", type=int, default=DEFAULT_STRIDE, help="grid stride")
    parser.add_argument("--levels", default="",
                        help="pyramid levels of vidcorr's coarse-to-fine read-out; a comma list "
                             "(e.g. 1,3) scores each model at each (default: the Matcher's)")
    parser.add_argument("--upsample", default="1",
                        help="vidcorr's finer read-out at 2 or 4 times the size; a comma list "
                             "(e.g. 1,2) scores each model with each (default: 1, none)")
    parser.add_argument("--readout", default="",
                        help="vidcorr's read-out, sensitivity or kernel; a comma list scores "
                             "each model with each (default: the Matcher's)")
    parser.add_argument("--refine", default="",
                        help="vidcorr's refinement on the frames, variational or none; a comma "
                             "list scores each model with each (default: the Matcher's)")
    parser.add_argument("--width", type=int, default=384,
                        help="downscale pairs to this width (0: full size)")
    parser.add_argument("--config", help="data config for the interpolation scores "
                                         "(default: the first checkpoint's run config)")
    parser.add_argument("--no-interpolation", action="store_true",
                        help="skip the middle-frame PSNR/SSIM scores")
    parser.add_argument("--out", default="evaluation/eval", help="output prefix")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's start-up log")
    args = parser.parse_args(argv)
    levels = _comma_list(parser, "--levels", args.levels, int, "integers like 3 or 1,3")
    upsamples = _comma_list(parser, "--upsample", args.upsample, int,
                            "integers like 2 or 1,2", default=1)
    names = registry.names()
    readouts = _comma_list(parser, "--readout", args.readout, names.index,
                           "%s or a comma list of them" % " or ".join(names), keep=True)
    refines = _comma_list(parser, "--refine", args.refine, REFINE_METHODS.index,
                          "%s or a comma list of them" % " or ".join(REFINE_METHODS), keep=True)
    with quiet_stderr(not args.verbose):
        return _evaluate(args, levels, upsamples, readouts, refines)


def _comma_list(parser, flag, value, convert, expected, default=None, keep=False):
    """The values of a comma-list flag, each passed through ``convert`` (kept as they are
    with ``keep``, ``convert`` then only checks them); ``(default,)`` for an empty list.
    A value ``convert`` refuses is a usage error naming the flag (exit 2)."""
    try:
        items = [v.strip() for v in value.split(",") if v.strip()]
        converted = [convert(v) for v in items]
    except ValueError:
        parser.error("%s: expected %s, got %r" % (flag, expected, value))
    return tuple(items if keep else converted) or (default,)


def _evaluate(args, levels, upsamples, readouts, refines):
    from vidcorr.evaluation.evaluate import run_evaluation
    from vidcorr.evaluation.plan import EvaluationPlan

    code, text = run_cli(lambda: run_evaluation(EvaluationPlan(
            checkpoints=args.checkpoint, untrained=args.untrained,
            builtin=[p for p in args.pairs.split(",") if p.strip()], gt_pairs=args.gt_pair,
            gt_kind=args.gt_kind, gt_scale=args.gt_scale,
            methods=[m for m in args.methods.split(",") if m.strip()], stride=args.stride,
            width=args.width, data_config=args.config,
            interpolation=not args.no_interpolation, levels=levels, upsamples=upsamples,
            readouts=readouts, refines=refines), out=args.out, progress=not args.no_progress))
    if code:
        return code
    print(text)
    return 0



def export_main(argv=None):
    """Export a trained run as a model folder with a card, or for serving without vidcorr.

      python scripts/export_model.py --run runs/cpu_small --out vidcorr/models/default \
          [--evaluation evaluation/default.json] [--notes "..."]
      python scripts/export_model.py --run vidcorr/models/default --out serving/default \
          --format saved_model,onnx
      python scripts/export_model.py --run RUN_A --run RUN_B --out DIR   (their average)

    checkpoint (the default): the network's variables, config.json and card.json, a
    folder Matcher loads like a run. saved_model: a cond-free, variable-free
    SavedModel with the entry points interpolate and match (docs/serving.md); onnx:
    the same as ONNX files too (pip install -e .[onnx])."""
    parser = argparse.ArgumentParser(description=inspect.cleandoc(export_main.__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", required=True, action="append",
                        help="run directory, model folder or checkpoint prefix; repeated: "
                             "export the element-wise mean of fine-tunes of one network")
    parser.add_argument("--out", required=True, help="folder to write")
    parser.add_argument("--format", default="checkpoint",
                        help="checkpoint, or saved_model and/or onnx (comma list; default "
                             "%(default)s)")
    parser.add_argument("--evaluation", help="evaluate.py JSON report to put in the card")
    parser.add_argument("--notes", default="", help="free text for the card")
    parser.add_argument("--no-interpolation", action="store_true",
                        help="do not measure validation PSNR/SSIM for the card")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's start-up log")
    args = parser.parse_args(argv)
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    serving = [f for f in formats if f != "checkpoint"]
    if not formats or ("checkpoint" in formats and serving):
        parser.error("--format is checkpoint, or saved_model and/or onnx, got %r" % args.format)
    if serving and (args.evaluation or args.notes):
        parser.error("--evaluation and --notes go into a checkpoint export's card; --format %s "
                     "copies the model's own card (export the checkpoint with them first)"
                     % args.format)
    if serving and len(args.run) > 1:
        parser.error("--format %s takes one --run (export an average as a checkpoint first)"
                     % args.format)
    with quiet_stderr(not args.verbose):
        if serving:
            from vidcorr.apps.serving import export_serving
            code, _ = run_cli(lambda: export_serving(args.run[0], args.out, serving))
        else:
            from vidcorr.apps.export import export_model
            code, _ = run_cli(lambda: export_model(
                args.run if len(args.run) > 1 else args.run[0], args.out, args.evaluation,
                args.notes,
                interpolation=not args.no_interpolation))
    return code


def _recipe_arguments(parser):
    """vidcorr-adapt's options that override the source model's recipe."""
    parser.add_argument("--tune", default="all", help="the layers to change: all, decoder or "
                                                       "head (default %(default)s)")
    parser.add_argument("--crop", type=int, nargs=2, metavar=("H", "W"),
                        help="training crop (default: the model's recipe)")
    parser.add_argument("--max-height", type=int,
                        help="downscale frames to at most this many rows (default: the "
                             "model's recipe)")
    parser.add_argument("--batch-size", type=int, help="default: the model's recipe")
    parser.add_argument("--layered-fraction", type=float,
                        help="share of the training triplets made as layered motion from the "
                             "clips' frames, 0 to 1 (default: the model's recipe)")
    parser.add_argument("--scales", help="comma list of the frames' sizes the training "
                        "triplets are cut from, factors up to 1, e.g. 1,0.5 (default: the "
                        "model's recipe)")


def _guard_arguments(parser):
    """vidcorr-adapt's options of the guard on large motion."""
    from vidcorr.apps.adapt import DEFAULT_GUARD_CANDIDATES, DEFAULT_GUARD_TOLERANCE
    parser.add_argument("--no-guard", action="store_true",
                        help="write the best weights by PSNR without checking that they still "
                             "match large motion as well as the source model")
    parser.add_argument("--guard-tolerance", type=float, default=DEFAULT_GUARD_TOLERANCE, help=(
        "the most acc@5 on large motion the adapted model may lose (default %(default)s)"))
    parser.add_argument("--guard-candidates", type=int, default=DEFAULT_GUARD_CANDIDATES, help=(
        "the best validations the guard tries, best first, 1 to 10 (default %(default)s)"))


def adapt_main(argv=None):
    """Fine-tune a model on your own footage (no labels needed) and write a model folder.

      vidcorr-adapt clip.mp4 [more clips or frame folders] --out models/mine [--minutes 5]
      vidcorr-correspond --frames DIR --checkpoint models/mine

    Trains on triplets of the clips with the model's own self-supervised recipe, judged
    by the interpolation PSNR on the end of each clip, held back; keeps the best weights,
    and writes the source model unchanged if adaptation does not beat it, or if none of the
    best weights matches large motion as well (layered pairs of the held-back frames).
    Ctrl-C ends the training and keeps the best so far."""
    from vidcorr.apps.adapt import (DEFAULT_ANCHOR, DEFAULT_AVERAGE, DEFAULT_LEARNING_RATE,
                                    DEFAULT_MINUTES, DEFAULT_MIX, DEFAULT_VALIDATE_EVERY,
                                    DEFAULT_WARMUP)
    parser = argparse.ArgumentParser(description=inspect.cleandoc(adapt_main.__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sources", nargs="+", help="video files or frame folders")
    parser.add_argument("--out", required=True, help="the model folder to write")
    parser.add_argument("--model", help="the model to adapt (default: the packaged one)")
    parser.add_argument("--minutes", type=float, default=DEFAULT_MINUTES,
                        help="time budget from the start (default %(default)s)")
    parser.add_argument("--steps", type=int, help="a number of steps instead of --minutes")
    parser.add_argument("--learning-rate", type=float, default=DEFAULT_LEARNING_RATE,
                        help="Adam's learning rate (default %(default)s)")
    parser.add_argument("--decay", action="store_true",
                        help="decay the learning rate with the clock over --minutes (default: "
                             "constant)")
    parser.add_argument("--anchor", type=float, default=DEFAULT_ANCHOR,
                        help="pull towards the source weights after each step, 0 to 0.5 "
                             "(default %(default)s)")
    parser.add_argument("--mix", type=float, default=DEFAULT_MIX, help="share of triplets from "
                        "the model's own training clips, 0 to 0.9 (default %(default)s)")
    parser.add_argument("--average", type=float, default=DEFAULT_AVERAGE,
                        help="validate and keep a moving average of the weights with this "
                             "decay per step, 0 to 0.999 (0: the weights themselves; "
                             "default %(default)s)")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP,
                        help="steps over which the learning rate rises linearly to its value "
                             "(0: none; default %(default)s)")
    _recipe_arguments(parser)
    parser.add_argument("--validate-every", type=int, default=DEFAULT_VALIDATE_EVERY,
                        help="steps between validations (default %(default)s)")
    _guard_arguments(parser)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--verbose", action="store_true", help="show TensorFlow's start-up log")
    args = parser.parse_args(argv)
    if args.scales is not None:
        args.scales = tuple(v for v in _comma_list(parser, "--scales", args.scales, float,
                                                   "a comma list of numbers, e.g. 1,0.5")
                            if v is not None)  # empty: AdaptSettings says what it needs
    with quiet_stderr(not args.verbose):
        return _adapt(args)


def _adapt(args):
    from vidcorr.apps.adapt import AdaptSettings, adapt
    from vidcorr.training.trainer import TrainingDiverged

    def work():
        settings = AdaptSettings(
            minutes=args.minutes, steps=args.steps, learning_rate=args.learning_rate,
            decay=args.decay, anchor=args.anchor, mix=args.mix, average=args.average,
            warmup=args.warmup, tune=args.tune, crop=args.crop,
            max_height=args.max_height, batch_size=args.batch_size,
            layered_fraction=args.layered_fraction, scales=args.scales,
            guard=not args.no_guard, guard_tolerance=args.guard_tolerance,
            guard_candidates=args.guard_candidates,
            validate_every=args.validate_every, seed=args.seed)
        return adapt(args.sources, args.out, args.model, settings,
                     log=lambda m: print(m, file=sys.stderr), progress=not args.no_progress)

    code, _ = run_cli(work, errors=(UserError, TrainingDiverged),
                      interrupted="interrupted before training started; nothing was written")
    return code
