"""Benchmark: vidcorr against PyTorch computing the same per-pixel sensitivities.

The packaged default model (or ``--checkpoint``) is rebuilt in PyTorch from
the same folded weights (``--width``-style specs of MIND with or without the
kernel head are supported). Before any timing, the two forward passes must
agree to 1e-4 on the benchmark's image pair. Then, on the same sample of grid
points, with the same number of threads everywhere:

  vidcorr        SensitivityGraph: the batched, windowed transpose of the
                 network, reduced on the device (TensorFlow of this Python;
                 with ``--tf1-python`` also TensorFlow 1.15 in that Python)
  torch loop     one forward pass, then ``torch.autograd.grad`` per pixel
                 (``retain_graph``)
  torch vmap     ``torch.func.vjp`` once, ``torch.func.vmap`` of its pullback
                 over chunks of one-hot cotangents
  torch compile  the faster of the two above with the network under
                 ``torch.compile`` (compile time reported, not timed)

Each reports seconds per pixel (after a warm-up), the share of sampled pixels
whose argmax in both frames equals vidcorr's, and the ratio to vidcorr. PyTorch
is the optional ``[bench]`` extra (``pip install -e .[bench]``); without it
the script says so and exits.

    python benchmarks/bench_peers.py [--size 128x384] [--points 96] [--threads 2]
        [--tf1-python ~/.cache/vidcorr-ci/py37/bin/python]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from timing import time_read_out  # benchmarks/timing.py, beside this script

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

STRIDE = 4


def _pair(height, width):
    """The cockatoo example pair, resized to the benchmark size, as ``[H, W, 6]`` in [0, 1]."""
    from vidcorr.io.video import to_rgb_float
    from vidcorr.io.video import read_image, resize_float

    frames = []
    for name in ("cockatoo_262.png", "cockatoo_264.png"):
        image = to_rgb_float(read_image(os.path.join(ROOT, "examples", name)), name)
        frames.append(resize_float(image, height, width))
    return np.concatenate(frames, -1).astype(np.float32)


def _points(height, width, count):
    from vidcorr.readout.pyramid import grid_points
    grid = grid_points(height, width, STRIDE, STRIDE // 2)
    return grid[np.linspace(0, len(grid) - 1, min(count, len(grid))).round().astype(int)]


def vidcorr_child(args):
    """Times vidcorr in this process (also under another Python: TensorFlow 1.15)."""
    from vidcorr.compat import TF_VERSION
    from vidcorr.readout.sensitivity.gradients import GradientSettings, SensitivityGraph
    from vidcorr.readout.sensitivity.memory import chunk_for_budget
    from vidcorr.readout.inference import find_model, fold_batch_norm

    height, width = (int(v) for v in args.size.split("x"))
    _, spec, values = find_model(args.checkpoint)
    chunk = chunk_for_budget(spec, height, width, 1024)
    graph = SensitivityGraph(spec, height, width, fold_batch_norm(values),
                             GradientSettings(chunk=chunk), threads=args.threads)
    image, points = _pair(height, width), _points(height, width, args.points)
    graph.set_images(image[..., :3], image[..., 3:])
    res, seconds, per_pixel, _ = time_read_out(graph, points, chunk)
    graph.close()
    if args.weights_out:  # for the PyTorch port: the folded weights and TensorFlow's output
        _save_reference(args.weights_out, spec, fold_batch_norm(values), image)
    print(json.dumps({"tf": ".".join(map(str, TF_VERSION)), "per_pixel": seconds / len(points),
                      "per_pixel_marginal": per_pixel, "peak_xy": res["peak_xy"].tolist()}))


def _save_reference(path, spec, weights, image):
    import dataclasses

    from vidcorr.compat import tf
    from vidcorr.model.network import mind
    graph = tf.Graph()
    with graph.as_default():
        out = mind(tf.constant(image[None]), False, spec=spec, folded=True)
        with tf.Session() as sess:
            for v in tf.global_variables():
                v.load(weights[v.op.name], sess)
            expected = sess.run(out)[0]
    np.savez(path, expected=expected, spec=json.dumps(dataclasses.asdict(spec)),
             **{"w:" + name: value for name, value in weights.items()})


def _load_reference(path):
    """``(spec, weights, expected forward output)`` saved by the vidcorr child."""
    from vidcorr.model.spec import NetworkSpec
    with np.load(path) as data:
        spec = json.loads(str(data["spec"]))
        weights = {k[2:]: data[k] for k in data.files if k.startswith("w:")}
        expected = data["expected"]
    return NetworkSpec(**dict(spec, skips=tuple(spec["skips"]))), weights, expected


def _vidcorr(args, python, weights_out=None):
    """Runs vidcorr in a child process: TensorFlow and PyTorch never share one (PyTorch's
    triton crashed importing beside TensorFlow)."""
    cmd = [python, os.path.abspath(__file__), "--vidcorr-child", "--size", args.size,
           "--points", str(args.points), "--threads", str(args.threads),
           "--checkpoint", args.checkpoint] + (["--weights-out", weights_out]
                                               if weights_out else [])
    env = dict(os.environ, PYTHONPATH=os.path.abspath(ROOT))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, universal_newlines=True, env=env)
    if proc.returncode:
        raise SystemExit("vidcorr under %s failed (exit %d)" % (python, proc.returncode))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def torch_mind(torch, spec, weights):
    """MIND's folded inference network as a PyTorch function ``frames [1, 6, H, W] -> [1, 3, H, W]``.

    Input sizes must be multiples of 32 (the TensorFlow network pads others by
    reflection first).
    """
    import torch.nn.functional as F  # noqa: N812
    from vidcorr.model.spec import MODEL_SCOPE, layer_plan

    plan = layer_plan(spec)
    params = {}
    for layer in plan:
        if layer.kind == "pool":
            continue
        w = weights["%s/%s/weights" % (MODEL_SCOPE, layer.name)]
        # TF conv [kh, kw, in, out] -> torch Conv2d [out, in, kh, kw]; TF transposed conv
        # [kh, kw, out, in] -> torch ConvTranspose2d [in, out, kh, kw]: the same permutation.
        w = np.transpose(w, (3, 2, 0, 1))
        params[layer.name] = (torch.tensor(np.ascontiguousarray(w)),
                              torch.tensor(weights["%s/%s/biases" % (MODEL_SCOPE, layer.name)]))
    act = (F.relu if spec.activation == "relu"
           else (lambda x: F.leaky_relu(x, spec.leaky_alpha)))
    k = spec.kernel_size

    def forward(frames):
        h = frames - 0.5
        features = {}
        for layer in plan[:-1]:
            if layer.kind == "pool":
                h = F.max_pool2d(h, 2)
                features[int(layer.name[3])] = h
                continue
            if layer.skip is not None:
                h = torch.cat([h, features[layer.skip]], 1)
            w, b = params[layer.name]
            if layer.kind == "up":
                h = act(F.conv_transpose2d(h, w, b, stride=2, padding=1))
            else:
                h = act(F.conv2d(h, w, b, padding=1))
            if layer.name == "enc1/conv3":
                features[0] = h
        w, b = params["output"]
        if not k:
            out = F.conv2d(h, w, b, padding=w.shape[-1] // 2)
            return out + (0.5 * (frames[:, :3] + frames[:, 3:]) if spec.residual == "average"
                          else 0.5)
        weights_ = torch.softmax(F.conv2d(h, w, b), 1)  # [1, 2K^2, H, W]: frame, dy, dx
        _, _, height, width = frames.shape
        out = 0.0
        for f in (0, 1):
            taps = F.unfold(frames[:, 3 * f:3 * f + 3], k, padding=k // 2)  # [1, 3 K^2, HW]
            taps = taps.view(1, 3, k * k, height, width)  # RGB, (dy, dx)
            out = out + (taps * weights_[:, None, f * k * k:(f + 1) * k * k]).sum(2)
        return out

    return forward


def _argmax(torch, grads, width):
    """``[N, 6, H, W]`` input gradients -> per pixel and frame the L2 peak ``[N, 2, (x, y)]``."""
    n = grads.shape[0]
    sens = grads.view(n, 2, 3, -1).pow(2).sum(2)  # [N, 2, HW]
    flat = sens.argmax(-1)
    return torch.stack([flat % width, flat // width], -1).numpy()


def _loop(torch, forward, x, points, width):
    out = forward(x)[0].sum(0)  # [H, W]
    grads = [torch.autograd.grad(out[int(py), int(px)], x, retain_graph=True)[0][0]
             for px, py in points]
    return _argmax(torch, torch.stack(grads), width)


def _vmap(torch, forward, x, points, width, chunk):
    from torch.func import vjp, vmap
    out, pullback = vjp(lambda inp: forward(inp)[0].sum(0), x)  # [H, W]
    peaks = []
    for i in range(0, len(points), chunk):
        part = points[i:i + chunk]
        cot = torch.zeros((len(part),) + tuple(out.shape))
        cot[torch.arange(len(part)), torch.as_tensor(part[:, 1]), torch.as_tensor(part[:, 0])] = 1
        grads = vmap(pullback)(cot)[0][:, 0]  # [n, 6, H, W]
        peaks.append(_argmax(torch, grads, width))
    return np.concatenate(peaks)


def _time(fn, points, warm):
    fn(points[:warm])  # warm-up
    start = time.perf_counter()
    peaks = fn(points)
    return (time.perf_counter() - start) / len(points), peaks


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="128x384", help="HxW, multiples of 32")
    parser.add_argument("--points", type=int, default=96, help="sampled stride-4 grid points")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=16, help="pixels per vmap call")
    parser.add_argument("--checkpoint", default=None, help="default: the packaged model")
    parser.add_argument("--tf1-python", help="a Python with TensorFlow 1.15 to time vidcorr in")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--memory-format", choices=("channels_last", "nchw"),
                        default="channels_last",
                        help="PyTorch's layout (channels_last is the faster here)")
    parser.add_argument("--vidcorr-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--weights-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.checkpoint is None:  # vidcorr.readout.matching.DEFAULT_MODEL, without TensorFlow
        args.checkpoint = os.path.join(ROOT, "vidcorr", "models", "default")
    if args.vidcorr_child:
        return vidcorr_child(args)
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        print("PyTorch is not installed: this benchmark needs the [bench] extra "
              "(pip install -e .[bench]); skipped.")
        return 0
    height, width = (int(v) for v in args.size.split("x"))
    if height % 32 or width % 32:
        raise SystemExit("--size must be multiples of 32 (the PyTorch port does not pad)")
    import tempfile
    reference_file = os.path.join(tempfile.mkdtemp(prefix="bench-peers-"), "reference.npz")
    ours = _vidcorr(args, sys.executable, reference_file)  # before PyTorch is imported
    spec, weights, expected = _load_reference(reference_file)
    import torch
    torch.set_num_threads(args.threads)
    image, points = _pair(height, width), _points(height, width, args.points)
    forward = torch_mind(torch, spec, weights)
    x = torch.tensor(np.transpose(image, (2, 0, 1))[None].copy())
    if args.memory_format == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    x.requires_grad_(True)
    with torch.no_grad():
        got = forward(x)[0].permute(1, 2, 0).numpy()
    diff = float(np.abs(got - expected).max())
    print("model %s (%s), %dx%d, %d points of the stride-%d grid, %d threads; PyTorch %s, %s"
          % (args.checkpoint, spec, height, width, len(points), STRIDE, args.threads,
             torch.__version__, args.memory_format))
    print("forward outputs: max |PyTorch - TensorFlow| = %.2e" % diff)
    if diff > 1e-4:
        raise SystemExit("the PyTorch port does not reproduce the network (max diff %.2e)" % diff)

    rows = []
    reference = np.array(ours["peak_xy"])
    rows.append(("vidcorr, TensorFlow %s" % ours["tf"], ours["per_pixel"], reference))
    if args.tf1_python:
        tf1 = _vidcorr(args, os.path.expanduser(args.tf1_python))
        rows.append(("vidcorr, TensorFlow %s" % tf1["tf"], tf1["per_pixel"],
                     np.array(tf1["peak_xy"])))
    loop = lambda p, f=forward: _loop(torch, f, x, p, width)  # noqa: E731
    vmapped = lambda p, f=forward: _vmap(torch, f, x, p, width, args.chunk)  # noqa: E731
    timed = {"torch loop (autograd.grad)": _time(loop, points, 4),
             "torch vmap(vjp), chunks of %d" % args.chunk: _time(vmapped, points, args.chunk)}
    for name, (seconds, peaks) in timed.items():
        rows.append((name, seconds, peaks))
    if not args.no_compile:
        best = min(timed, key=lambda n: timed[n][0])
        start = time.perf_counter()
        compiled = torch.compile(forward)
        fn = ((lambda p: _loop(torch, compiled, x, p, width)) if "loop" in best
              else (lambda p: _vmap(torch, compiled, x, p, width, args.chunk)))
        fn(points[:args.chunk])  # compiles
        compile_s = time.perf_counter() - start
        seconds, peaks = _time(fn, points, args.chunk)
        rows.append(("torch.compile + %s (compile %.0f s)" % (best, compile_s), seconds, peaks))
    print("\n| method | s/pixel | argmax = vidcorr (both frames) | time / vidcorr TF2 |")
    print("|---|---|---|---|")
    for name, seconds, peaks in rows:
        same = np.all(peaks == reference, axis=(1, 2)).mean()
        print("| %s | %.4f | %.3f | %.2fx |" % (name, seconds, same, seconds / ours["per_pixel"]))


if __name__ == "__main__":
    main()
