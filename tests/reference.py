"""Independent numpy references used by the tests (no TensorFlow in here)."""

import numpy as np


def conv2d_same(x, w, stride=1):
    """[B,H,W,C] x [k,k,C,F] -> [B,ceil(H/s),ceil(W/s),F], TensorFlow's SAME padding."""
    b, h, wd, _ = x.shape
    k = w.shape[0]
    oh, ow = -(-h // stride), -(-wd // stride)
    pad_h = max((oh - 1) * stride + k - h, 0)
    pad_w = max((ow - 1) * stride + k - wd, 0)
    xp = np.pad(x, [(0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2),
                    (0, 0)])
    out = np.zeros((b, oh, ow, w.shape[3]), np.float64)
    for di in range(k):
        for dj in range(k):
            patch = xp[:, di:di + (oh - 1) * stride + 1:stride, dj:dj + (ow - 1) * stride + 1:stride]
            out += patch.astype(np.float64) @ w[di, dj].astype(np.float64)
    return out


def conv2d_transpose_same(x, w, stride=2):
    """Adjoint of conv2d_same: [B,H,W,C] x [k,k,F,C] -> [B,sH,sW,F]."""
    b, h, wd, _ = x.shape
    k = w.shape[0]
    oh, ow = h * stride, wd * stride
    pad = max((h - 1) * stride + k - oh, 0)
    before = pad // 2
    full = np.zeros((b, (h - 1) * stride + k, (wd - 1) * stride + k, w.shape[2]), np.float64)
    for i in range(h):
        for j in range(wd):
            for di in range(k):
                for dj in range(k):
                    full[:, i * stride + di, j * stride + dj] += x[:, i, j].astype(np.float64) @ \
                        w[di, dj].T.astype(np.float64)
    return full[:, before:before + oh, before:before + ow]


def fake_quant(x, lo, hi, num_bits=8, narrow_range=False):
    """TensorFlow's fake quantisation with zero-point nudging, per range given."""
    qmin = 1.0 if narrow_range else 0.0
    qmax = float(2 ** num_bits - 1)
    scale = (hi - lo) / (qmax - qmin)
    zp_from_min = qmin - lo / scale
    nudged_zp = np.clip(np.round(zp_from_min), qmin, qmax)
    nmin = (qmin - nudged_zp) * scale
    nmax = (qmax - nudged_zp) * scale
    clamped = np.clip(x, nmin, nmax)
    return np.floor((clamped - nmin) / scale + 0.5) * scale + nmin, scale


def fake_quant_per_channel(w, axis, num_bits=8):
    """Per-channel fake quantisation of ``w`` on its own range (containing 0)."""
    moved = np.moveaxis(w, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    lo = np.minimum(flat.min(0), 0.0)
    hi = np.maximum(flat.max(0), 0.0)
    q, scale = fake_quant(moved, lo, hi, num_bits)
    return np.moveaxis(q, -1, axis), scale


def batch_norm_train(x, gamma, beta, eps):
    """Training-mode batch norm: normalise with the biased batch variance."""
    mean = x.mean(axis=(0, 1, 2))
    var = x.var(axis=(0, 1, 2))
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def batch_norm_test(x, gamma, beta, mean, var, eps):
    """Inference-mode batch norm with given statistics."""
    return (x - mean) / np.sqrt(var + eps) * gamma + beta
