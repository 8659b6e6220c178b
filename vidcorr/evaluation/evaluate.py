"""Evaluation: vidcorr and classic matchers against ground truth, and interpolation quality.

:func:`evaluate_matching` runs each method on each evaluation pair (downscaled
to a fixed width, see :mod:`vidcorr.evaluation.groundtruth`) and scores it with
:func:`vidcorr.evaluation.metrics.match_metrics`. vidcorr and the dense peers are scored
at the same grid points (the same stride); SIFT on its own keypoints.
Peers that cannot run here (OpenCV missing) are skipped with the reason.

:func:`interpolation_quality` scores the network's middle frame on held-out
real triplets (the validation split of a data config) by PSNR and SSIM,
against the mean of the two frames and DIS-flow midpoint warping.

:func:`write_report` writes the markdown table, a JSON file and a PNG chart.
"""

import json
import os
import time

import numpy as np

from vidcorr.evaluation import peers
from vidcorr.errors import UserError
from vidcorr.io import rundir
from vidcorr.io.files import (atomic_path, atomic_write, check_writable_folder,
                              remove_empty_folders, remove_stale_parts)
from vidcorr.readout.pyramid import DEFAULT_STRIDE, grid_points
from vidcorr.evaluation.groundtruth import EVAL_WIDTH, builtin_pair, load_pair
from vidcorr.model.losses import psnr_numpy
from vidcorr.evaluation.metrics import COVERAGE_FRACTIONS, COVERAGE_THRESHOLDS, THRESHOLDS, \
    dense_to_matches, match_metrics, ssim

REPORT_SUFFIXES = (".md", ".json", ".png")
DEFAULT_REPORT_NAME = "eval"  # the report's name in a folder given as --out

__all__ = ["check_report_paths", "report_prefix", "REPORT_SUFFIXES", "evaluate_matching", "interpolation_quality", "markdown_table", "write_report",
           "run_evaluation"]

MATCH_COLUMNS = (["acc@%g" % t for t in THRESHOLDS] +
                 ["acc@%g/%d%%" % (t, round(100 * f)) for f in COVERAGE_FRACTIONS
                  for t in COVERAGE_THRESHOLDS] + ["median_epe", "matches", "seconds"])


def _vidcorr_matches(matcher, pair, stride, progress=False):
    matches = matcher.match(pair.image1, pair.image2, stride=stride, progress=progress)
    keep = matches.valid
    return matches.p1[keep], matches.p3[keep], matches.confidence[keep]


def evaluate_matching(pairs, models, methods=peers.PEERS, stride=DEFAULT_STRIDE,
                      width=EVAL_WIDTH, log=print, progress=False):
    """Scores vidcorr models and peers on evaluation pairs.

    Args:
      pairs: :class:`vidcorr.evaluation.groundtruth.EvalPair` objects (full size).
      models: ``{label: Matcher}`` of vidcorr models to score.
      methods: peer names (see :data:`vidcorr.evaluation.peers.PEERS`).
      stride: grid stride for vidcorr and the dense peers.
      width: the size protocol's width (0 keeps the full size).
      log: a print-like function for progress and skipped peers.
      progress: show vidcorr's progress bar.

    Returns:
      ``(rows, skipped)``: one dict per (pair, method) with the metrics and
      ``seconds``; and ``{peer: reason}`` for peers that could not run.
    """
    unknown = [m for m in methods if m not in peers.PEERS]
    if unknown:
        raise UserError("unknown method(s) %s; choose from %s"
                        % (", ".join(unknown), ", ".join(peers.PEERS)))
    skipped = {}
    for name in methods:
        ok, reason = peers.peer_available(name)
        if not ok:
            skipped[name] = reason
            log("skipping %s: %s" % (name, reason))
    runnable = [m for m in methods if m not in skipped]
    rows = []
    for pair in pairs:
        pair = pair.resized(width) if width else pair
        h, w = pair.image1.shape[:2]
        grid = grid_points(h, w, stride)
        for label, matcher in models.items():
            start, built = time.time(), matcher.build_seconds
            p1, p3, conf = _vidcorr_matches(matcher, pair, stride, progress)
            rows.append(_row(pair, label, match_metrics(p1, p3, pair.truth, grid,
                                                        confidence=conf), start))
            # the read-out's own time: graphs are built once per size, then reused
            rows[-1]["build_seconds"] = matcher.build_seconds - built
            rows[-1]["seconds"] -= rows[-1]["build_seconds"]
            log("%s / %s: acc@5 %.3f in %.1f s (+ %.1f s building graphs)"
                % (pair.name, label, rows[-1]["acc@5"], rows[-1]["seconds"],
                   rows[-1]["build_seconds"]))
        for name in runnable:
            start = time.time()
            if name == "sift":
                p1, p3 = peers.sift_matches(pair.image1, pair.image2)
                metrics = match_metrics(p1, p3, pair.truth)
            else:
                flow = peers.dense_flow(name, pair.image1, pair.image2)
                p1, p3 = dense_to_matches(flow, grid)
                metrics = match_metrics(p1, p3, pair.truth, grid)
            rows.append(_row(pair, name, metrics, start))
    return rows, skipped


def _row(pair, method, metrics, start):
    row = {"pair": pair.name, "size": "%dx%d" % (pair.image1.shape[1], pair.image1.shape[0]),
           "method": method}
    row.update(metrics)
    row["seconds"] = time.time() - start
    return row


def interpolation_quality(models, inputs, targets, log=print):
    """PSNR and SSIM of middle frames on held-out triplets.

    Args:
      models: ``{label: Matcher}`` whose networks predict the middle frame.
      inputs: ``[N, H, W, 6]`` frames t and t+2 in [0, 1].
      targets: ``[N, H, W, 3]`` true middle frames.
      log: print-like.

    Returns:
      Rows ``{"method", "psnr", "ssim", "triplets"}``: each model, the frame
      average, and DIS midpoint warping (skipped without OpenCV).
    """
    inputs, targets = np.asarray(inputs, np.float32), np.asarray(targets, np.float32)
    predictors = {label: m.predict_batch for label, m in models.items()}
    predictors["frame average"] = lambda x: 0.5 * (x[..., :3] + x[..., 3:])
    ok, reason = peers.peer_available("dis")
    if ok:
        predictors["DIS midpoint warp"] = lambda x: np.stack(
            [peers.midpoint_warp(p[..., :3], p[..., 3:]) for p in x])
    else:
        log("skipping DIS midpoint warp: %s" % reason)
    try:
        import skimage.metrics  # noqa: F401
        with_ssim = True
    except ImportError:
        with_ssim = False
        log("no SSIM: scikit-image is missing (pip install -e .[eval])")
    rows = []
    for label, predict in predictors.items():
        preds = predict(inputs)  # [N, H, W, 3]
        rows.append({"method": label,
                     "psnr": float(np.mean(psnr_numpy(preds, targets))),
                     "ssim": float(np.mean([ssim(np.clip(p, 0, 1), t)
                                            for p, t in zip(preds, targets)]))
                     if with_ssim else None,
                     "triplets": int(len(inputs))})
    return rows


def _fmt(value, digits=3):
    if value is None:
        return "-"
    if isinstance(value, (int, np.integer)):
        return "%d" % value
    if isinstance(value, float) and np.isnan(value):
        return "n/a"
    return "%.*f" % (digits, value)


def markdown_table(rows, interpolation=None, skipped=None):
    """The evaluation as markdown: a matching table (and an interpolation table)."""
    lines = ["| pair | size | method | " + " | ".join(MATCH_COLUMNS) + " |",
             "|" + "---|" * (len(MATCH_COLUMNS) + 3)]
    for r in rows:
        cells = [r["pair"], r["size"], r["method"]] + [
            _fmt(r.get(c), 1 if c in ("seconds", "median_epe") else 3) for c in MATCH_COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    if any("build_seconds" in r for r in rows):
        lines += ["", "vidcorr's seconds are per pair once its graphs are built (built once per "
                      "image size; the building took %s s)." % ", ".join(
                          "%.1f" % r["build_seconds"] for r in rows if "build_seconds" in r)]
    if skipped:
        lines += [""] + ["Skipped %s: %s" % (k, v) for k, v in sorted(skipped.items())]
    if interpolation:
        lines += ["", "| middle frame | PSNR dB | SSIM | triplets |", "|---|---|---|---|"]
        for r in interpolation:
            lines.append("| %s | %.2f | %s | %d |" % (r["method"], r["psnr"], _fmt(r["ssim"], 4),
                                                       r["triplets"]))
    return "\n".join(lines) + "\n"


def _chart(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pairs = sorted(set(r["pair"] for r in rows))
    fig, axes = plt.subplots(1, len(pairs), figsize=(5.5 * len(pairs), 4), squeeze=False)
    for ax, pair in zip(axes[0], pairs):
        sub = [r for r in rows if r["pair"] == pair]
        xs = np.arange(len(THRESHOLDS))
        width = 0.8 / max(1, len(sub))
        for i, r in enumerate(sub):
            ax.bar(xs + i * width, [r["acc@%g" % t] for t in THRESHOLDS], width,
                   label=r["method"])
        ax.set_xticks(xs + 0.4 - width / 2)
        ax.set_xticklabels(["@%g px" % t for t in THRESHOLDS])
        ax.set_ylim(0, 1)
        ax.set_title("%s (%s)" % (pair, sub[0]["size"]))
        ax.set_ylabel("share of matches within T px")
        ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100, format="png")
    plt.close(fig)


def report_prefix(out):
    """The report's path prefix for ``--out``: ``out`` itself, or ``OUT/eval`` where ``out``
    names a folder (an existing one, or a path ending in ``/``).

    Raises:
      UserError: for an empty ``out``.
    """
    if not out or not str(out).strip():
        raise UserError("--out is empty: give an output prefix like evaluation/eval (it writes "
                        "eval.md, eval.json and eval.png)")
    out = os.fspath(out)
    if out.endswith(("/", os.sep)) or os.path.isdir(out):
        return os.path.join(out, DEFAULT_REPORT_NAME)
    return out


def check_report_paths(out_prefix):
    """Checks before any work that the report ``PREFIX.md/.json/.png`` can be written, and
    removes what killed runs left in its folder.

    Returns:
      The folders created for it, outermost first: the caller removes them again when no
      report is written (:func:`vidcorr.io.files.remove_empty_folders`).

    Raises:
      UserError: if the folder cannot take files or a report path is a folder.
    """
    folder = os.path.dirname(os.path.abspath(out_prefix))
    created = check_writable_folder(folder, "--out")
    for ext in REPORT_SUFFIXES:
        if os.path.isdir(out_prefix + ext):
            remove_empty_folders(created)
            raise UserError("cannot write %s: it is a folder" % (out_prefix + ext))
    remove_stale_parts(folder)
    return created


def write_report(out_prefix, rows, interpolation=None, skipped=None, meta=None, log=print):
    """Writes ``PREFIX.md``, ``PREFIX.json`` and ``PREFIX.png`` (atomically).

    Returns:
      The markdown text.
    """
    folder = os.path.dirname(os.path.abspath(out_prefix))
    os.makedirs(folder, exist_ok=True)
    text = markdown_table(rows, interpolation, skipped)
    payload = {"matching": rows, "interpolation": interpolation or [],
               "skipped": skipped or {}, "meta": meta or {}}
    for ext, content in ((".md", text), (".json", json.dumps(payload, indent=2, default=float))):
        atomic_write(out_prefix + ext, content)
    if rows:
        try:
            _chart(rows, out_prefix + ".png")
            log("wrote %s.md, %s.json and %s.png" % ((out_prefix,) * 3))
        except UserError as err:  # a full disk: say that the numbers are safe
            raise UserError("%s (the table and the numbers are in %s.md and %s.json)"
                            % (err, out_prefix, out_prefix))
        except ImportError:
            log("wrote %s.md and %s.json; no chart: matplotlib is missing (%s)"
                % (out_prefix, out_prefix, peers.EXTRA))
    return text


def run_evaluation(plan, out="evaluation/eval", log=print, progress=True):
    """The whole evaluation behind ``scripts/evaluate.py``; returns the markdown text.

    Args:
      plan: an :class:`vidcorr.evaluation.plan.EvaluationPlan`: what to score.
      out: output prefix for ``.md``, ``.json`` and ``.png``.
      log: print-like.
      progress: show a progress bar while vidcorr matches.

    Raises:
      UserError: for bad pairs, checkpoints, methods or configs.
    """
    out = report_prefix(out)
    created = check_report_paths(out)  # before the work: a report that cannot be written
    try:                               # loses it
        return _evaluate(plan, out, log, progress)
    finally:  # a failed or interrupted evaluation leaves no empty folder behind
        remove_empty_folders(created)


def _evaluate(p, out, log, progress):
    from vidcorr.model.config import load_config
    from vidcorr.training.data import TripletData
    config = load_config(p.data_config) if p.interpolation and p.data_config else None
    pairs = [builtin_pair(name.strip()) for name in p.builtin]
    pairs += [load_pair(a, b, gt, p.gt_kind, p.gt_scale) for a, b, gt in p.gt_pairs]
    if not pairs:
        raise UserError("nothing to evaluate: give --pairs or --gt-pair")
    models, predictors, first = p.models(log)
    try:
        held_out = None  # [N, H, W, 6], [N, H, W, 3]: the middle frames' inputs and targets
        no_interpolation = None  # why there are no interpolation scores
        if p.interpolation:
            if config is not None:  # the user's --config: its data must be there
                held_out = TripletData(config.data, log=log).validation_set()
            elif first and rundir.read_config(first) is not None:
                try:  # the run's own data may not be on this machine
                    held_out = TripletData(rundir.read_config(first).data,
                                           log=log).validation_set()
                except UserError as err:
                    no_interpolation = "the run's data cannot be read here (%s)" % err
            else:
                no_interpolation = "no trained checkpoint with a config.json"
            if no_interpolation:
                log("no interpolation scores: %s; give --config DATA.json (or "
                    "--no-interpolation)" % no_interpolation)
        rows, skipped = evaluate_matching(pairs, models, p.methods, p.stride, p.width, log,
                                          progress)
        # one predictor per model: the middle frame has no levels
        interp = None if held_out is None else interpolation_quality(predictors, *held_out,
                                                                     log=log)
        meta = {"stride": p.stride, "width": p.width, "levels": list(p.levels),
                "upsamples": list(p.upsamples), "readouts": list(p.readouts),
                "refines": list(p.refines),
                "models": {k: m.checkpoint for k, m in models.items()}}
        if no_interpolation:
            meta["no_interpolation"] = no_interpolation
    finally:
        for matcher in models.values():
            matcher.close()
    return write_report(out, rows, interp, skipped, meta, log)
