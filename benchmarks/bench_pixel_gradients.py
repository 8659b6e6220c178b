"""Per-pixel gradients of a user's own network: vidcorr.PixelGradients against what users
would do instead, on the same network, input and threads.

    python benchmarks/bench_pixel_gradients.py [--size 128x384] [--stride 4] [--loop 24]
        [--threads 2] [--fused] [--only-ours]

The network is a small U-Net of the seed's kind (an encoder-decoder with skips and
batch norm in inference mode; ``--fused`` uses fused batch norm and ELU, which the
transposed pass cannot follow, so PixelGradients runs pfor). Methods:

* ``seed loop``: one ``tf.gradients`` op and one ``sess.run`` per pixel (``--loop``
  pixels; building the ops is part of its cost, as in the seed);
* ``jacobian (pfor)``: ``tf.GradientTape().jacobian`` of the chosen pixels' channel sums
  with respect to the input, vectorised (``experimental_use_pfor``), one ``sess.run``;
* ``PixelGradients``: vidcorr's engine (``reduce="maps"``: the full maps come back), built
  once, then the whole stride grid;
* ``PixelGradients, window="auto"``: the same maps cropped to the receptive field, the
  backward pass itself running on windows (compared with the loop after pasting the
  windows into whole maps);
* ``torch vmap(vjp)``, where PyTorch is installed (``pip install -e .[bench]``): the same
  network and weights in PyTorch, ``torch.func.vjp`` once and ``torch.func.vmap`` of its
  pullback over chunks of 64 one-pixel cotangents, the same threads.

Prints seconds per pixel, each method's ratio to PixelGradients, the largest difference
of its maps from the seed loop's on the loop's pixels, and the process's peak resident
memory. ``--only-ours`` leaves out the Jacobian and the full maps (at 480x640 the grid's
full maps alone would take 70 GB): the loop and PixelGradients' windows, for its memory
at a large size (the goal: 480x640 at stride 4 within 4 GB).
"""

import argparse
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from vidcorr.compat import session_config, tf  # noqa: E402
from vidcorr.readout.sensitivity.pixels import PixelGradients  # noqa: E402


def _conv(x, name, cout, k=3):
    cin = x.shape.as_list()[-1]
    w = tf.get_variable(name + "/w", [k, k, cin, cout],
                        initializer=tf.variance_scaling_initializer(seed=len(name)))
    return tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME") + tf.get_variable(
        name + "/b", [cout], initializer=tf.zeros_initializer())


def _bn(x, name, fused):
    c = x.shape.as_list()[-1]
    get = lambda n, v: tf.get_variable(name + "/" + n, [c], initializer=tf.constant_initializer(v))  # noqa: E731
    mean, var, scale, offset = get("mean", 0.1), get("var", 1.5), get("scale", 1.2), get("offset", 0.0)
    if fused:
        return tf.nn.elu(tf.nn.fused_batch_norm(x, scale, offset, mean, var, 1e-3,
                                                is_training=False)[0])
    return tf.nn.relu(tf.nn.batch_normalization(x, mean, var, offset, scale, 1e-3))


def unet(x, fused=False, width=16):
    """Three levels down, two up with skips; batch norm after every convolution."""
    _, h, w, _ = x.shape.as_list()
    skips, y = [], x
    for level in range(3):
        y = _bn(_conv(y, "down%d" % level, width * 2 ** level), "bn_down%d" % level, fused)
        if level < 2:
            skips.append(y)
            y = tf.nn.max_pool(y, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    for level in (1, 0):
        c = width * 2 ** level
        up_w = tf.get_variable("upconv%d/w" % level, [4, 4, c, y.shape.as_list()[-1]],
                               initializer=tf.variance_scaling_initializer(seed=level))
        y = tf.nn.conv2d_transpose(y, up_w, [1, h // 2 ** level, w // 2 ** level, c],
                                   [1, 2, 2, 1], "SAME")
        y = _bn(_conv(tf.concat([y, skips[level]], axis=3), "up%d" % level, c),
                "bn_up%d" % level, fused)
    return _conv(y, "out", 3, k=1)  # [1, H, W, 3]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="128x384")
    parser.add_argument("--stride", type=int, default=4)
    parser.add_argument("--loop", type=int, default=24, help="pixels for the seed loop")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--fused", action="store_true")
    parser.add_argument("--chunk", type=int, help="PixelGradients' pixels per chunk "
                                                  "(default: from its memory budget)")
    parser.add_argument("--only-ours", action="store_true", help="PixelGradients alone")
    args = parser.parse_args()
    h, w = (int(v) for v in args.size.split("x"))
    image = np.random.RandomState(0).uniform(size=(h, w, 3)).astype(np.float32)
    rng = np.random.RandomState(1)
    loop_points = np.stack([rng.randint(0, w, args.loop), rng.randint(0, h, args.loop)], 1)
    build = lambda x: unet(x, args.fused)  # noqa: E731

    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [1, h, w, 3])
        y = build(x)
        sess = tf.Session(config=session_config(args.threads))
        sess.run(tf.global_variables_initializer())
        values = {v.op.name: sess.run(v) for v in tf.global_variables()}
        start = time.time()
        loop = np.stack([sess.run(tf.gradients(tf.reduce_sum(y[0, py, px, :]), x)[0],
                                  {x: image[None]})[0] for px, py in loop_points])
        loop_seconds = (time.time() - start) / args.loop
        start = time.time()
        windows = ("auto",) if args.only_ours else (None, "auto")
        engines = [PixelGradients((x, y), session=sess, reduce="maps", threads=args.threads,
                                  chunk=args.chunk, window=window) for window in windows]
        build_seconds = (time.time() - start) / len(windows)
    grid = engines[0].grid(args.stride)
    times = []
    for engine in engines:
        engine.set_input(image)
        engine.run(grid[:engine.chunk])  # warm-up
        start = time.time()
        engine.run(grid)
        times.append((time.time() - start) / len(grid))
    ours = times[0]
    rows = [("seed loop (one tf.gradients + sess.run per pixel)", loop_seconds, 0.0)]
    for pfor in () if args.only_ours else (True, False):  # 1.15's pfor cannot: a while loop
        try:
            seconds, maps = _jacobian(build, image, loop_points, grid if pfor else loop_points,
                                      args.threads, pfor)
        except Exception as err:  # pfor's missing converters raise various errors
            print("jacobian with pfor=%s failed on TensorFlow %s: %s"
                  % (pfor, tf.__version__, str(err).strip().splitlines()[-1][:150]))
            continue
        rows.append(("jacobian (GradientTape, %s)" % ("pfor" if pfor else "while loop"),
                     seconds, np.abs(maps - loop).max()))
        break
    row = None if args.only_ours else _torch_row(values, args, image, loop_points, grid, loop)
    rows += [row] if row else []
    for engine, seconds in zip(engines, times):
        got = engine.run(loop_points)
        maps = got["maps"] if "origin" not in got else engine.paste(got["maps"], got["origin"])
        rows.append(("vidcorr.PixelGradients (%s%s)" % (engine.backward, "" if "origin" not in got
                                                        else ", window %dx%d" % engine.window_shape),
                     seconds, np.abs(maps - loop).max()))
    print("| TF %s, %dx%d, stride %d (%d pixels), %d threads | s / pixel | x PixelGradients | "
          "max difference from the loop |" % (tf.__version__, h, w, args.stride, len(grid),
                                               args.threads))
    print("|---|---|---|---|")
    for name, seconds, diff in rows:
        print("| %s | %.5f | %.1f | %.2e |" % (name, seconds, seconds / ours, diff))
    print("PixelGradients: built in %.2f s, %d pixels per chunk, %d per sess.run; peak "
          "resident memory %.0f MB" % (build_seconds, engines[0].chunk, engines[0].per_run,
                       resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
    for engine in engines:
        engine.close()


def _jacobian(build, image, loop_points, grid, threads, pfor=True):
    """Seconds per pixel of the vectorised Jacobian over the grid (in chunks that fit), and
    its maps of the loop's pixels."""
    h, w = image.shape[:2]
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [1, h, w, 3])
        rows = tf.placeholder(tf.int32, [None])
        cols = tf.placeholder(tf.int32, [None])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = build(x)
            picked = tf.gather_nd(tf.reduce_sum(y[0], axis=-1), tf.stack([rows, cols], 1))
        jac = tape.jacobian(picked, x, experimental_use_pfor=pfor)[:, 0]  # [N, H, W, 3]
        sess = tf.Session(config=session_config(threads))
        sess.run(tf.global_variables_initializer())
        run = lambda p: sess.run(jac, {x: image[None], rows: p[:, 1], cols: p[:, 0]})  # noqa: E731
        maps = run(loop_points)
        chunk = 64
        run(grid[:chunk])
        start = time.time()
        for i in range(0, len(grid), chunk):
            run(grid[i:i + chunk])
        seconds = (time.time() - start) / len(grid)
        sess.close()
    return seconds, maps


def _torch_row(values, args, image, loop_points, grid, loop):
    """The torch row, from ``benchmarks/torch_pixel_gradients.py`` in a child process
    (TensorFlow and PyTorch never share one: importing both crashed); None without torch."""
    import json
    import subprocess
    import tempfile

    folder = tempfile.mkdtemp(prefix="bench-pixel-gradients-")
    path = os.path.join(folder, "inputs.npz")
    np.savez(path, image=image, loop_points=loop_points, grid=grid, loop=loop,
             **{"w:" + k: v for k, v in values.items()})
    child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_pixel_gradients.py")
    proc = subprocess.run([sys.executable, child, path, "--threads", str(args.threads)] +
                          (["--fused"] if args.fused else []), stdout=subprocess.PIPE,
                          universal_newlines=True)
    os.remove(path)
    os.rmdir(folder)
    out = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    if not out.get("version"):
        print("torch vmap(vjp): %s" % out.get("skipped", "the child failed (exit %d)"
                                              % proc.returncode))
        return None
    return "torch %s vmap(vjp)" % out["version"], out["seconds"], out["difference"]


if __name__ == "__main__":
    main()
