"""Convolution forward speed against the machine's numpy GEMM rate (same FLOP count).

    python bench/conv.py [--repeat N] [--backward] [--winograd]

Prints one JSON line per layer: conv forward GFLOP/s through the registry kernel,
numpy GEMM GFLOP/s for the matching (F, K) @ (K, N*OH*OW) product, and their ratio.
--winograd: instead, for the 3x3 stride-1 layers of ResNet-18 (batch 8, 64x64 input) and ResNet-50
(batch 4, 224x224), the forward, data-gradient and weight-gradient milliseconds in the direct form and
in the Winograd form (ember.ops.nn_conv._WINOGRAD off / on, interleaved), whatever the layer's rule picks.
Timings are the best of N interleaved runs (on a shared machine best-of filters interference).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ember import ops  # noqa: E402
from ember.ops import OpContext, nn_conv  # noqa: E402

LAYERS = [  # name, (N, C, H, W), num_filter, kernel, stride, pad, groups
    ("lenet_conv1", (64, 1, 28, 28), 20, (5, 5), (1, 1), (0, 0), 1),
    ("lenet_conv2", (64, 20, 12, 12), 50, (5, 5), (1, 1), (0, 0), 1),
    ("resnet_stem", (8, 3, 64, 64), 64, (7, 7), (2, 2), (3, 3), 1),
    ("resnet_3x3_64", (8, 64, 16, 16), 64, (3, 3), (1, 1), (1, 1), 1),
    ("resnet_3x3_128", (8, 128, 8, 8), 128, (3, 3), (1, 1), (1, 1), 1),
    ("resnet_3x3_256_s2", (8, 128, 8, 8), 256, (3, 3), (2, 2), (1, 1), 1),
    ("mobilenet_dw", (8, 64, 32, 32), 64, (3, 3), (1, 1), (1, 1), 64),
]


def best_times(fns, repeat: int):
    """Best wall time of each function, measured interleaved so load spikes hit all of them alike."""
    for fn in fns:
        fn()  # warm up (allocations, BLAS threads)
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t)
    return best


WINOGRAD_LAYERS = [  # name, (N, C, H, W), num_filter: 3x3, stride 1, padding 1
    ("resnet18_16x16_64", (8, 64, 16, 16), 64), ("resnet18_8x8_128", (8, 128, 8, 8), 128),
    ("resnet18_4x4_256", (8, 256, 4, 4), 256), ("resnet18_2x2_512", (8, 512, 2, 2), 512),
    ("resnet50_56x56_64", (4, 64, 56, 56), 64), ("resnet50_28x28_128", (4, 128, 28, 28), 128),
    ("resnet50_14x14_256", (4, 256, 14, 14), 256), ("resnet50_7x7_512", (4, 512, 7, 7), 512),
]


def winograd_rows(repeat: int) -> None:
    """Direct against Winograd form per 3x3 stride-1 layer: forward, data and weight gradient (ms)."""
    rng = np.random.default_rng(0)
    geo = nn_conv.Geometry((3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1)
    for name, dshape, f in WINOGRAD_LAYERS:
        x = rng.standard_normal(dshape, dtype=np.float32)
        w = rng.standard_normal((f, dshape[1], 3, 3), dtype=np.float32)
        out = np.empty((dshape[0], f) + dshape[2:], np.float32)
        dy = rng.standard_normal(out.shape, dtype=np.float32)
        dx, dw = np.empty_like(x), np.empty_like(w)
        parts = {"fwd": lambda: nn_conv.conv_forward(np, x, w, geo, out),
                 "bwd_data": lambda: nn_conv.conv_backward_data(np, dy, w, geo, x.shape, dx),
                 "bwd_weight": lambda: nn_conv.conv_backward_weight(np, x, dy, geo, dw)}

        def form(on, fn):
            def run():
                nn_conv._WINOGRAD = on
                fn()
            return run
        fns = [form(on, fn) for fn in parts.values() for on in (False, True)]
        times = best_times(fns, repeat)
        nn_conv._WINOGRAD = True
        row = {"layer": name, "data": dshape, "num_filter": f,
               "winograd_taken": nn_conv._winograd_fits(np, geo, x, w, out)}
        for k, part in enumerate(parts):
            row[part + "_ms"] = {"direct": round(times[2 * k] * 1e3, 3), "winograd": round(times[2 * k + 1] * 1e3, 3)}
        print(json.dumps(row), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--backward", action="store_true", help="also time _backward_Convolution")
    ap.add_argument("--winograd", action="store_true", help="direct against Winograd form, 3x3 stride-1 layers")
    args = ap.parse_args()
    if args.winograd:
        winograd_rows(args.repeat)
        return
    rng = np.random.default_rng(0)
    conv = ops.get("Convolution")
    bwd = ops.get("_backward_Convolution")
    ctx = OpContext(np)
    for name, dshape, f, kernel, stride, pad, groups in LAYERS:
        attrs = conv.parse_attrs(dict(kernel=kernel, num_filter=f, stride=stride, pad=pad, num_group=groups))
        x = rng.standard_normal(dshape, dtype=np.float32)
        ins, outs, _ = conv.shapes(attrs, [dshape, None, None])
        w = rng.standard_normal(ins[1], dtype=np.float32)
        b = rng.standard_normal(ins[2], dtype=np.float32)
        out = np.empty(outs[0], np.float32)
        n, _, oh, ow = outs[0]
        k = ins[1][1] * kernel[0] * kernel[1]
        flops = 2.0 * n * f * k * oh * ow
        kern = conv.kernel("cpu")
        # the same FLOP count as one dense GEMM (grouped layers: groups GEMMs of (F/g, K) @ (K, N*P))
        a = rng.standard_normal((f // groups, k), dtype=np.float32)
        bm = rng.standard_normal((k, n * oh * ow), dtype=np.float32)
        t_conv, t_gemm = best_times([lambda: kern(ctx, attrs, [x, w, b], [out], []),
                                     lambda: [a @ bm for _ in range(groups)]], args.repeat)
        row = {"layer": name, "data": dshape, "num_filter": f, "kernel": kernel, "stride": stride,
               "groups": groups, "gflop": round(flops / 1e9, 4),
               "conv_fwd_gflops": round(flops / t_conv / 1e9, 2), "numpy_gemm_gflops": round(flops / t_gemm / 1e9, 2),
               "fraction_of_gemm": round(t_gemm / t_conv, 3), "conv_fwd_ms": round(t_conv * 1e3, 3)}
        if args.backward:
            dy = rng.standard_normal(outs[0], dtype=np.float32)
            grads = [np.empty(ins[0], np.float32), np.empty(ins[1], np.float32), np.empty(ins[2], np.float32)]
            bk = bwd.kernel("cpu")
            (t_b,) = best_times([lambda: bk(ctx, attrs, [dy, x, w], grads, [])], max(3, args.repeat // 3))
            row["conv_bwd_gflops"] = round(2 * flops / t_b / 1e9, 2)
            row["conv_bwd_ms"] = round(t_b * 1e3, 3)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
