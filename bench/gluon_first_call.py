"""Cost of the first hybridized call of a Gluon model zoo network (trace + graph passes + memory
plan + bind), ember vs MXNet 1.9.1.

The net is initialized and called once imperatively (so deferred initialization is done and
not counted), then hybridized; the first hybridized call and the following steady calls are
timed.  first_call_overhead_s = first call - median steady call: what tracing, the passes and
planning add.  Inference (no autograd) and training (record + backward) are reported apart,
each on a fresh hybridize().

    python bench/gluon_first_call.py --model resnet50_v1                   # ember (+ MXNet if its venv exists)
    ~/.cache/ember-anchors/mxnet/bin/python bench/gluon_first_call.py --mx-module mxnet
"""
import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

MXNET_PY = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")


def measure(mod_name: str, model: str, batch: int, size: int, steady: int) -> dict:
    if mod_name == "ember":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    mx = importlib.import_module(mod_name)
    net = mx.gluon.model_zoo.vision.get_model(model)
    net.initialize(mx.init.Xavier())
    x = mx.nd.random.uniform(shape=(batch, 3, size, size))
    net(x).wait_to_read()
    rec = {"impl": mod_name, "model": model, "batch": batch, "size": size}

    def infer():
        net(x).wait_to_read()

    def train():
        with mx.autograd.record():
            out = net(x)
        out.backward()
        mx.nd.waitall()

    for mode, call in (("infer", infer), ("train", train)):
        net.hybridize(static_alloc=True, static_shape=True)  # clears the cached graph
        t0 = time.perf_counter()
        call()
        first = time.perf_counter() - t0
        times = []
        for _ in range(steady):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        rec[f"{mode}_first_call_s"] = round(first, 4)
        rec[f"{mode}_steady_call_s"] = round(med, 4)
        rec[f"{mode}_first_call_overhead_s"] = round(first - med, 4)
    return rec


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mx-module", default="ember", choices=("ember", "mxnet"))
    p.add_argument("--model", default="resnet50_v1")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--steady", type=int, default=3)
    args = p.parse_args()
    print(json.dumps(measure(args.mx_module, args.model, args.batch, args.size, args.steady)), flush=True)
    if args.mx_module == "ember" and os.path.exists(MXNET_PY):
        subprocess.run([MXNET_PY, os.path.abspath(__file__), "--mx-module", "mxnet", "--model", args.model,
                        "--batch", str(args.batch), "--size", str(args.size), "--steady", str(args.steady)],
                       check=False)


if __name__ == "__main__":
    main()
