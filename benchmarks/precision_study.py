"""Where precision is lost: read-out variants on pairs with known motion.

On layered triplets with sub-pixel motion cut from *held-out* frames (the
validation part of the model's data config, so the network never trained on
them) and on the ground-truth pairs (Grove3, and Motorcycle downscaled until its
motion fits one read-out), all at a single level so that only the read-out
differs, it scores:

* the peak of the full sensitivity (``l2``/``l1``/``max`` channel reduction),
  with no sub-pixel step, the quadratic fit, or a 3x3 centroid;
* the kernel head's direct term alone: the tap with the largest softmax
  weight, and the weights' centroid (the blend's mean offset, per frame);
* the second-peak confidence as a ranking: accuracy of the most confident
  25 / 50 / 100 % of the matches (default read-out).

Scores: acc@1, acc@2, median endpoint error of the flow t -> t+2 (pixels).

    python benchmarks/precision_study.py [--checkpoint RUN] [--stride 8] [--triplets 6]
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vidcorr.compat import tf  # noqa: E402
from vidcorr.training.data import TripletData  # noqa: E402
from vidcorr.readout.pyramid import grid_points  # noqa: E402
from vidcorr.evaluation.groundtruth import builtin_pair  # noqa: E402
from vidcorr.io.rundir import read_config  # noqa: E402
from vidcorr.readout.inference import MODEL_SCOPE, FoldedGraph  # noqa: E402
from vidcorr.training.layered import subpixel_layered_triplet  # noqa: E402
from vidcorr.readout.matching import Matcher  # noqa: E402
from vidcorr.readout.sensitivity.subpixel import centroid_peaks, refine_peaks  # noqa: E402
from vidcorr.evaluation.metrics import coverage_accuracy, endpoint_errors  # noqa: E402
from vidcorr.model.network import mind, padding_for  # noqa: E402


class _LogitsGraph(FoldedGraph):
    """The folded network's kernel-head logits for one image size."""

    def _build(self, spec):
        self.inputs = tf.placeholder(tf.float32, [1, self.height, self.width, 6])
        endpoints = {}
        mind(self.inputs, False, spec=spec, folded=True, endpoints=endpoints, name=MODEL_SCOPE)
        self.logits = endpoints["logits"]  # [1, H', W', 2K^2], padded size


def direct_term_peaks(matcher, frame_t, frame_t2, points):
    """Per point and frame: the largest-weight tap and the weights' centroid, ``[N, 2, 2]``."""
    spec = matcher.spec
    h, w = frame_t.shape[:2]
    top, _, left, _ = padding_for(h, w)
    k, r = spec.kernel_size, spec.kernel_size // 2
    graph = _LogitsGraph(spec, h, w, matcher.weights)
    logits = graph.sess.run(graph.logits,
                            {graph.inputs: np.concatenate([frame_t, frame_t2], -1)[None]})[0]
    graph.close()
    z = logits[points[:, 1] + top, points[:, 0] + left].astype(np.float64)  # [N, 2K^2]
    weights = np.exp(z - z.max(-1, keepdims=True))
    weights = (weights / weights.sum(-1, keepdims=True)).reshape(-1, 2, k, k)  # frame, dy, dx
    offs = np.arange(-r, r + 1, dtype=np.float64)
    flat = weights.reshape(-1, 2, k * k).argmax(-1)
    argmax = np.stack([offs[flat % k], offs[flat // k]], -1)  # [N, 2, (dx, dy)]
    mass = weights.sum(axis=(-1, -2))
    centroid = np.stack([(weights.sum(-2) * offs).sum(-1) / mass,
                         (weights.sum(-1) * offs).sum(-1) / mass], -1)
    return points[:, None] + argmax, points[:, None] + centroid


def score(errors):
    return {"acc@1": np.mean(errors <= 1), "acc@2": np.mean(errors <= 2),
            "median": np.median(errors)}


def study_pair(matchers, frame_t, frame_t2, points, errors_of):
    """Rows ``{variant: errors}`` for one pair; ``errors_of(p1, p3)`` scores matches."""
    rows, conf = {}, None
    h, w = frame_t.shape[:2]
    for norm, matcher in matchers.items():
        graph = matcher.readout.graph_for(h, w)
        graph.set_images(frame_t, frame_t2)
        res = graph.run(points)
        variants = {"none": res["peak_xy"].astype(np.float64),
                    "quadratic": refine_peaks(res["peak_xy"], res["patch"], w, h),
                    "centroid 3x3": centroid_peaks(res["peak_xy"], res["patch"], w, h)}
        for name, pos in variants.items():
            rows["sensitivity %s, %s" % (norm, name)] = errors_of(pos[:, 0], pos[:, 1])
        if norm == "l2":
            with np.errstate(divide="ignore", invalid="ignore"):
                conf = np.where(res["peak"] > 0, 1 - res["second"] / res["peak"], 0).min(1)
    arg, cen = direct_term_peaks(matchers["l2"], frame_t, frame_t2, points)
    rows["direct term, argmax tap"] = errors_of(arg[:, 0], arg[:, 1])
    rows["direct term, weight centroid"] = errors_of(cen[:, 0], cen[:, 1])
    return rows, conf


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", help="run or checkpoint (default: the packaged model)")
    parser.add_argument("--stride", type=int, default=8)
    parser.add_argument("--triplets", type=int, default=6, help="layered held-out triplets")
    parser.add_argument("--max-motion", type=float, default=3.0,
                        help="layered motion bound, pixels per frame step")
    args = parser.parse_args(argv)
    matchers = {n: Matcher(args.checkpoint, norm=n, levels=1) for n in ("l2", "l1", "max")}
    if not matchers["l2"].spec.kernel_size:
        sys.exit("the precision study needs a model with the kernel head")
    config = read_config(matchers["l2"].checkpoint)
    studies = {}

    # Layered triplets from held-out frames: middle pixel p at p - v in t, p + v in t+2.
    data = TripletData(config.data)
    rng = np.random.RandomState(7)
    all_rows, all_conf = {}, []
    for _ in range(args.triplets):
        i, t = data._random_frame(rng, data.val_ranges)
        j, u = data._random_frame(rng, data.val_ranges)
        frames, flow = subpixel_layered_triplet(rng, data.videos[i][t], data.videos[j][u],
                                                96, 160, args.max_motion, 4)
        frames = frames / 255.0
        points = grid_points(96, 160, args.stride, args.stride // 2)
        v = flow[points[:, 1], points[:, 0]][:, ::-1]  # (vx, vy)
        rows, conf = study_pair(matchers, frames[0], frames[2], points,
                                lambda p1, p3: np.linalg.norm((p3 - p1) - 2 * v, axis=1))
        for name, errors in rows.items():
            all_rows.setdefault(name, []).append(errors)
        all_conf.append(conf)
    studies["layered (held-out frames, |v| <= %g px/step)" % args.max_motion] = (
        {k: np.concatenate(v) for k, v in all_rows.items()}, np.concatenate(all_conf))

    # Ground-truth pairs at a size where the motion fits one read-out.
    for name, width in (("grove3", 384), ("motorcycle", 96)):
        pair = builtin_pair(name).resized(width)
        h, w = pair.image1.shape[:2]
        points = grid_points(h, w, args.stride if width > 100 else 4)

        def errors_of(p1, p3, truth=pair.truth):
            errors, scored = endpoint_errors(p1, p3, truth)
            full = np.full(len(p1), np.nan)
            full[scored] = errors
            return full
        rows, conf = study_pair(matchers, pair.image1, pair.image2, points, errors_of)
        studies["%s at %dx%d" % (name, w, h)] = (rows, conf)

    for title, (rows, conf) in studies.items():
        print("\n### %s\n" % title)
        print("| read-out | acc@1 | acc@2 | median EPE | matches |\n|---|---|---|---|---|")
        for name, errors in rows.items():
            ok = ~np.isnan(errors)
            s = score(errors[ok])
            print("| %s | %.3f | %.3f | %.2f | %d |" % (name, s["acc@1"], s["acc@2"],
                                                        s["median"], ok.sum()))
        errors = rows["sensitivity l2, quadratic"]
        ok = ~np.isnan(errors)
        ranked = coverage_accuracy(errors[ok], conf[ok], fractions=(0.25, 0.5, 1.0),
                                   thresholds=(1, 2))
        random = coverage_accuracy(errors[ok], None, fractions=(0.25, 0.5), thresholds=(1, 2))
        print("\nconfidence ranking (l2, quadratic): " + ", ".join(
            "%s %.3f" % kv for kv in ranked.items()) + "; random: " + ", ".join(
            "%s %.3f" % kv for kv in random.items()))
    for m in matchers.values():
        m.close()


if __name__ == "__main__":
    main()
