"""The torch row of ``bench_pixel_gradients.py``: the same U-Net and weights in PyTorch,
per-pixel input gradients by ``torch.func.vmap`` over ``torch.func.vjp``'s pullback.

Run by ``bench_pixel_gradients.py`` in a child process (it never imports TensorFlow):

    python benchmarks/torch_pixel_gradients.py INPUTS.npz [--threads 2] [--fused]

``INPUTS.npz`` holds the image, the grid, the seed loop's pixels and maps and the weights
(``w:<variable name>``). Prints one JSON line: torch's version, seconds per pixel over the
grid (chunks of 64 one-pixel cotangents, the forward pass once) and the largest difference
of its maps from the loop's.
"""

import argparse
import json
import time

import numpy as np


def _torch_unet(torch, values, fused):
    """The benchmark's U-Net in PyTorch (NCHW) with the TensorFlow graph's weights."""
    F = torch.nn.functional
    t = lambda name: torch.from_numpy(values[name])  # noqa: E731

    def conv(x, name, k=3):
        return F.conv2d(x, t(name + "/w").permute(3, 2, 0, 1), t(name + "/b"), padding=k // 2)

    def bn(x, name):
        mean, var, scale, offset = (t(name + "/" + n)[None, :, None, None]
                                    for n in ("mean", "var", "scale", "offset"))
        y = (x - mean) / torch.sqrt(var + 1e-3) * scale + offset
        return F.elu(y) if fused else F.relu(y)

    def net(x):  # [1, 3, H, W]
        skips, y = [], x
        for level in range(3):
            y = bn(conv(y, "down%d" % level), "bn_down%d" % level)
            if level < 2:
                skips.append(y)
                y = F.max_pool2d(y, 2)
        for level in (1, 0):  # TF's [k, k, out, in] -> [in, out, k, k]; SAME is padding 1
            y = F.conv_transpose2d(y, t("upconv%d/w" % level).permute(3, 2, 0, 1), stride=2,
                                   padding=1)
            y = bn(conv(torch.cat([y, skips[level]], 1), "up%d" % level), "bn_up%d" % level)
        return conv(y, "out", k=1)
    return net


def _torch_vmap(torch, values, fused, image, loop_points, grid, threads, chunk=64):
    """Seconds per pixel of ``vmap`` over ``vjp``'s pullback on the grid, and the maps of
    the loop's pixels ``[N, H, W, 3]``."""
    torch.set_num_threads(threads)
    net = _torch_unet(torch, values, fused)
    h, w = image.shape[:2]
    x = torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1)[None]))
    _, pullback = torch.func.vjp(net, x)  # the forward pass once, for every chunk

    def run(points):
        cotangents = torch.zeros(len(points), 1, 3, h, w)
        cotangents[torch.arange(len(points)), 0, :, points[:, 1], points[:, 0]] = 1.0
        return torch.func.vmap(lambda c: pullback(c)[0])(cotangents)[:, 0].detach()  # [K, 3, H, W]

    maps = run(loop_points).numpy().transpose(0, 2, 3, 1)
    run(grid[:chunk])  # warm-up
    start = time.time()
    for i in range(0, len(grid), chunk):
        run(grid[i:i + chunk])
    return (time.time() - start) / len(grid), maps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--fused", action="store_true", help="ELU after batch norm")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print(json.dumps({"skipped": "PyTorch is not installed (pip install -e .[bench])"}))
        return
    with np.load(args.inputs) as data:
        values = {k[2:]: data[k] for k in data.files if k.startswith("w:")}
        image, loop_points, grid, loop = (data[k] for k in ("image", "loop_points", "grid", "loop"))
    seconds, maps = _torch_vmap(torch, values, args.fused, image, loop_points, grid, args.threads)
    print(json.dumps({"version": torch.__version__, "seconds": seconds,
                      "difference": float(np.abs(maps - loop).max())}))


if __name__ == "__main__":
    main()
