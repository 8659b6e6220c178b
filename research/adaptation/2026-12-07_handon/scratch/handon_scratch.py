"""Scratch: hand-on smoothing variants, scored on the large-motion layered pairs
(foreground / background misses) and the developers' pairs (acc@1/acc@5)."""
import json, os, sys, time
import numpy as np
sys.path.insert(0, "/work/main/research/adaptation")
import gt_layered, large_misses
from vidcorr.compat import tf
from vidcorr.readout.kernel import graph, smoothing
from vidcorr.readout.matching import Matcher
from vidcorr.readout.pyramid import MIN_CONFIDENCE_WEIGHT

STATE = {"H": None}
orig = smoothing.smooth_field
_c2f = graph._coarse_to_fine

def c2f(spec, frame_t, frame_t2, options, max_levels):
    STATE["H"] = frame_t.shape.as_list()[1]
    return _c2f(spec, frame_t, frame_t2, options, max_levels)
graph._coarse_to_fine = c2f

def level_factor(field):
    h = field.shape.as_list()[1]
    return 2.0 ** round(np.log2(STATE["H"] / (2.0 * h)))   # 2^index

def bilateral(field, confidence, sigma, sr, step, floor=0.0):
    taps, r = smoothing._gaussian_taps(sigma)
    c = field.shape.as_list()[3]
    w = tf.maximum(confidence, 0.0)[..., None] + MIN_CONFIDENCE_WEIGHT
    pad = lambda x: smoothing.symmetric_pad(smoothing.symmetric_pad(x, r, r, 1), r, r, 2)
    pf, pw = pad(field), pad(w)
    h, wd = tf.shape(field)[1], tf.shape(field)[2]
    num, den = 0.0, 0.0
    offs = list(range(-r, r + 1, step))
    if 0 not in offs: offs = sorted(set(offs + [0]))
    for dy in offs:
        for dx in offs:
            g = float(taps[dy + r] * taps[dx + r])
            fn = pf[:, r + dy:r + dy + h, r + dx:r + dx + wd]
            wn = pw[:, r + dy:r + dy + h, r + dx:r + dx + wd]
            d2 = tf.reduce_sum(tf.square(fn - field), axis=3, keepdims=True)
            k = g * wn * (tf.exp(-d2 / (2.0 * sr * sr)) + floor)
            num += k * fn
            den += k
    return num / den

def make(variant):
    kind = variant.get("kind", "base")
    def smooth(field, confidence, size, sigma):
        f = level_factor(field)
        if kind == "base":
            return orig(field, confidence, size, sigma)
        if kind == "frame":   # sigma constant in the frames' pixels
            return orig(field, confidence, size, sigma / f ** variant.get("p", 1.0))
        if kind == "bilateral" and f not in variant.get("levels", [f]):
            return orig(field, confidence, size, sigma)
        if kind == "bilateral":
            sr = variant["sr"] / (f if variant.get("sr_frame") else 1.0)
            return bilateral(field, confidence, sigma, sr, variant.get("step", 2), variant.get("floor", 0.0))
        raise ValueError(kind)
    return smooth

def large(variant, matcher, held, pairs=6, stride=8):
    h, w = held.shape[1:3]
    STATE["H"] = h
    tot = np.zeros(6, int)
    for n in range(pairs):
        clip = gt_layered.layered(held, n * len(held) // pairs, gt_layered.MOTIONS["large"], h, w)
        grid, seen, miss = large_misses.misses(matcher, clip, stride)
        layer = clip.which_layer(grid.astype(np.float64), 1)
        g = [layer == 1, layer == 0]
        tot += [int(np.sum(miss & seen & x)) for x in g] + [int(np.sum(seen & x)) for x in g] + [0, 0]
    return tot[:4]

def devpairs(variant_name):
    from vidcorr.evaluation.evaluate import run_evaluation
    from vidcorr.evaluation.plan import EvaluationPlan
    plan = EvaluationPlan(checkpoints=["default=/work/main/vidcorr/models/default"], methods=[],
                          stride=8, interpolation=False)
    STATE["H"] = 288  # 384 columns
    out = "/work/scratch/s12/dev_" + variant_name
    run_evaluation(plan, out=out, progress=False)
    return open(out + ".md").read()

if __name__ == "__main__":
    variants = json.loads(sys.argv[1])
    dev = len(sys.argv) > 2 and sys.argv[2] == "dev"
    _, _, held = gt_layered.held_back("/work/scratch/s11/defaults")
    for name, v in variants.items():
        graph.smooth_field = make(v)
        t = time.time()
        m = Matcher(None, max_seconds=0)
        r = large(v, m, held)
        m.close()
        print(name, v, "fg miss %d bg miss %d of %d/%d" % tuple(r), "%.0fs" % (time.time() - t), flush=True)
        if dev:
            print(devpairs(name), flush=True)
