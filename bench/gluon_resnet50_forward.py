"""Bench: forward time of a hybridized model-zoo network (issue 14's figure: resnet50_v1, batch 4,
3x224x224), ember vs MXNet 1.9.1, the very same Gluon code on both.

`get_model(name)`, every weight drawn from numpy with a seed made from its name (He-scaled normal;
the layers' own constant initializers for the rest: both frameworks get the same numbers, since the
zoo's parameter names are MXNet's), `hybridize(static_alloc=True,
static_shape=True)`, warm-up calls, then `--reps` timed blocks of `--iters` calls each
(`wait_to_read` on every output, as an inference loop would).  Reports the median ms per forward
and images/s, plus a checksum of the output (`out_sum`, `out_head`) that must agree between
implementations (same weights, same input) to about 1e-3 relative: a correctness check.

    python3 bench/gluon_resnet50_forward.py --impl mxnet --mx-module ember
    ~/.cache/ember-anchors/mxnet/bin/python bench/gluon_resnet50_forward.py --impl mxnet --mx-module mxnet
Interleaved through the anchors' driver (absolute path as the bench name):
    cd /work/shared/anchors && IMPLS="ember mxnet" EMBER_PY=python3 TMO=600 \
        ./compare.sh /work/main/bench/gluon_resnet50_forward 3 --
"""
import argparse
import importlib
import json
import os
import platform
import statistics
import sys
import time
import zlib

import numpy as np


def seeded_initializer(mx):
    """An initializer giving every weight values that depend only on its name, so both frameworks
    (the zoo's parameter names are MXNet's) get the same numbers whatever order they initialize in;
    gamma/beta/running statistics/biases keep the layers' own constant initializers."""

    class Seeded(mx.init.Initializer):
        def _init_weight(self, name, arr):
            rng = np.random.RandomState(zlib.crc32(str(name).encode()))
            fan_in = int(np.prod(arr.shape[1:]))  # He-scaled: activations stay O(1) through 50 layers
            arr[:] = (rng.standard_normal(arr.shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    return Seeded()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--impl", choices=("mxnet",), default="mxnet", help="only the MXNet API (ember or MXNet)")
    p.add_argument("--mx-module", default="ember", choices=("ember", "mxnet"))
    p.add_argument("--model", default="resnet50_v1")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--warmup", type=int, default=2, help="untimed calls (the first one binds the graph)")
    p.add_argument("--reps", type=int, default=5, help="timed blocks; the median is reported")
    p.add_argument("--iters", type=int, default=5, help="forward calls per timed block")
    args = p.parse_args()

    if args.mx_module == "ember":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    mx = importlib.import_module(args.mx_module)
    net = mx.gluon.model_zoo.vision.get_model(args.model)
    net.initialize(seeded_initializer(mx))
    x = mx.nd.array(np.random.RandomState(1).uniform(-1, 1, (args.batch, 3, args.size, args.size)).astype(np.float32))
    net.hybridize(static_alloc=True, static_shape=True)
    for _ in range(args.warmup):
        out = net(x)
        out.wait_to_read()
    times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        for _ in range(args.iters):
            out = net(x)
            out.wait_to_read()
        times.append((time.perf_counter() - t0) / args.iters)
    t = statistics.median(times)
    out_np = out.asnumpy().astype(np.float64)
    record = {"bench": "gluon_resnet50_forward", "impl": args.impl, "module": args.mx_module,
              "version": mx.__version__, "python": platform.python_version(), "ncpu": os.cpu_count(),
              "model": args.model, "batch": args.batch, "size": args.size, "hybridize": True,
              "results": {"ms_per_forward": round(t * 1e3, 3), "images_per_s": round(args.batch / t, 2),
                          "ms_per_forward_all": [round(v * 1e3, 3) for v in times],
                          "out_shape": list(out_np.shape), "out_sum": round(float(out_np.sum()), 4),
                          "out_abs_mean": round(float(np.abs(out_np).mean()), 6),
                          "out_head": [round(float(v), 5) for v in out_np.ravel()[:4]]}}
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
