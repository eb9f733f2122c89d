"""Planned memory of a hybridized Gluon ResNet-18 v1 (batch 32, 224x224), inference and training:
ember vs MXNet 1.9.1.

The network comes from `gluon.model_zoo.vision.resnet18_v1` in each framework, is hybridized and
called once (inference) and once under `autograd.record()` + `backward()` (training).
- ember: the "Total N bytes allocated" line of `HybridBlock.memory_plan(training=...)`, i.e. the
  plan of the executor the hybridized call bound (intermediates, outputs included; parameters,
  their gradients and aux states are external storage).
- MXNet: its CachedOp does not expose its plan to Python, so the hybridized block is exported and
  the exported symbol bound with `simple_bind` (grad_req 'null' / 'write' for the parameters,
  'null' for data), and the "Total N MB allocated" of `debug_str()` is read: MXNet's planner
  (the same MXPlanMemory pass the CachedOp runs) on the same graph, at MXNet's MB resolution.

    python bench/gluon_memplan.py                                        # ember (+ MXNet if its venv exists)
    ~/.cache/ember-anchors/mxnet/bin/python bench/gluon_memplan.py --mx-module mxnet
"""
import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile

MXNET_PY = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")


def measure(mod_name: str, batch: int, size: int) -> dict:
    if mod_name == "ember":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    mx = importlib.import_module(mod_name)
    net = mx.gluon.model_zoo.vision.resnet18_v1()
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.random.uniform(shape=(batch, 3, size, size))
    net(x).wait_to_read()
    with mx.autograd.record():
        out = net(x)
    out.backward()
    mx.nd.waitall()
    rec = {"impl": mod_name, "net": "resnet18_v1", "batch": batch, "size": size}
    if mod_name == "ember":
        for mode, training in (("infer", False), ("train", True)):
            text = net.memory_plan(training=training)
            m = re.search(r"Total (\d+) bytes allocated", text)
            rec[f"{mode}_planned_MB"] = round(int(m.group(1)) / 2 ** 20, 2)
    else:
        with tempfile.TemporaryDirectory() as d:
            net.export(os.path.join(d, "r18"))
            sym = mx.sym.load(os.path.join(d, "r18-symbol.json"))
        for mode, req in (("infer", "null"), ("train", "write")):
            reqs = {n: ("null" if n == "data" else req) for n in sym.list_arguments()}
            ex = sym.simple_bind(mx.cpu(), grad_req=reqs, data=(batch, 3, size, size))
            m = re.search(r"Total (\d+) MB allocated", ex.debug_str())
            rec[f"{mode}_planned_MB"] = int(m.group(1))
    return rec


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mx-module", default="ember", choices=("ember", "mxnet"))
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--size", type=int, default=224)
    args = p.parse_args()
    print(json.dumps(measure(args.mx_module, args.batch, args.size)), flush=True)
    if args.mx_module == "ember" and os.path.exists(MXNET_PY):
        subprocess.run([MXNET_PY, os.path.abspath(__file__), "--mx-module", "mxnet", "--batch", str(args.batch),
                        "--size", str(args.size)], check=False)


if __name__ == "__main__":
    main()
