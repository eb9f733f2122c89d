"""Planned memory of MLP, LeNet, ResNet-18, VGG-11, MobileNet and an unrolled LSTM: ember vs MXNet 1.9.1.

The nets are built with the MXNet symbol API by this very file, so the same graph is
bound by ember (`--mx-module ember`) and by MXNet (`--mx-module mxnet`, run with MXNet's
python).  For ember it reports the planned bytes of intermediates (outputs included;
arguments, gradients with grad_req='write' and aux states are external, as in MXNet),
the liveness lower bound for the chosen order, the naive total (every operator output
its own buffer) and each algorithm's total; for MXNet the "Total N MB allocated" of
executor.debug_str() (integer MB, MXNet's own resolution).

    python bench/memplan.py                     # every net, ember, + MXNet if its venv exists
    python bench/memplan.py --net resnet18 --mode train
    EMBER_BACKWARD_DO_MIRROR=1 python bench/memplan.py --net resnet18 --mode train   (recompute)
    ~/.cache/ember-anchors/mxnet/bin/python bench/memplan.py --mx-module mxnet --net lenet
"""
import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import time

NETS = ("mlp", "lenet", "resnet18", "vgg11", "mobilenet", "lstm32")
BATCH = {"mlp": 128, "lenet": 64, "lstm32": 32}
MXNET_PY = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")


def build(mx, net, B):
    data = mx.sym.var("data")
    S = mx.sym

    def conv_bn(x, name, c, k, s, p, groups=1, relu=True):
        x = S.Convolution(x, kernel=(k, k), stride=(s, s), pad=(p, p), num_filter=c, num_group=groups,
                          no_bias=True, name=name + "_conv")
        x = S.BatchNorm(x, name=name + "_bn")
        return S.Activation(x, act_type="relu", name=name + "_relu") if relu else x

    if net == "mlp":
        h = S.Activation(S.FullyConnected(data, num_hidden=512, name="fc1"), act_type="relu")
        h = S.Activation(S.FullyConnected(h, num_hidden=512, name="fc2"), act_type="relu")
        return S.SoftmaxOutput(S.FullyConnected(h, num_hidden=10, name="fc3"), name="softmax"), {"data": (B, 784)}
    if net == "lenet":
        h = S.Activation(S.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1"), act_type="relu")
        h = S.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2))
        h = S.Activation(S.Convolution(h, kernel=(5, 5), num_filter=50, name="conv2"), act_type="relu")
        h = S.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2))
        h = S.Activation(S.FullyConnected(S.Flatten(h), num_hidden=500, name="fc1"), act_type="relu")
        return S.SoftmaxOutput(S.FullyConnected(h, num_hidden=10, name="fc2"), name="softmax"), \
            {"data": (B, 1, 28, 28)}
    if net == "resnet18":  # gluon resnet18_v1 layout (BasicBlockV1)
        h = conv_bn(data, "stem", 64, 7, 2, 3)
        h = S.Pooling(h, pool_type="max", kernel=(3, 3), stride=(2, 2), pad=(1, 1))
        cin = 64
        for stage, c in enumerate((64, 128, 256, 512)):
            for blk in range(2):
                s = 2 if (blk == 0 and stage > 0) else 1
                name = f"s{stage}b{blk}"
                body = conv_bn(h, name + "a", c, 3, s, 1)
                body = conv_bn(body, name + "b", c, 3, 1, 1, relu=False)
                short = conv_bn(h, name + "d", c, 1, s, 0, relu=False) if (s != 1 or cin != c) else h
                h = S.Activation(body + short, act_type="relu")
                cin = c
        h = S.Flatten(S.Pooling(h, pool_type="avg", global_pool=True, kernel=(7, 7)))
        return S.SoftmaxOutput(S.FullyConnected(h, num_hidden=1000, name="fc"), name="softmax"), \
            {"data": (B, 3, 224, 224)}
    if net == "vgg11":
        h = data
        for i, (c, n) in enumerate(((64, 1), (128, 1), (256, 2), (512, 2), (512, 2))):
            for j in range(n):
                h = S.Activation(S.Convolution(h, kernel=(3, 3), pad=(1, 1), num_filter=c, name=f"conv{i}_{j}"),
                                 act_type="relu")
            h = S.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2))
        h = S.Flatten(h)
        for k in range(2):
            h = S.Dropout(S.Activation(S.FullyConnected(h, num_hidden=4096, name=f"fc{k}"), act_type="relu"), p=0.5)
        return S.SoftmaxOutput(S.FullyConnected(h, num_hidden=1000, name="fc2"), name="softmax"), \
            {"data": (B, 3, 224, 224)}
    if net == "mobilenet":  # gluon mobilenet1.0 layout
        dw = [32, 64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024]
        pw = [64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024]
        strides = [1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1]
        h = conv_bn(data, "stem", 32, 3, 2, 1)
        for i, (d, p, s) in enumerate(zip(dw, pw, strides)):
            h = conv_bn(h, f"dw{i}", d, 3, s, 1, groups=d)
            h = conv_bn(h, f"pw{i}", p, 1, 1, 0)
        h = S.Flatten(S.Pooling(h, pool_type="avg", global_pool=True, kernel=(7, 7)))
        return S.SoftmaxOutput(S.FullyConnected(h, num_hidden=1000, name="fc"), name="softmax"), \
            {"data": (B, 3, 224, 224)}
    if net == "lstm32":
        T, H = 32, 256
        xs = S.SliceChannel(data, num_outputs=T, axis=1, squeeze_axis=True, name="slice")
        wi, bi = S.var("i2h_weight"), S.var("i2h_bias")
        wh, bh = S.var("h2h_weight"), S.var("h2h_bias")
        h, c = S.var("h0"), S.var("c0")
        hs = []
        for t in range(T):
            gates = S.FullyConnected(xs[t], weight=wi, bias=bi, num_hidden=4 * H, name=f"t{t}_i2h") + \
                S.FullyConnected(h, weight=wh, bias=bh, num_hidden=4 * H, name=f"t{t}_h2h")
            g = S.SliceChannel(gates, num_outputs=4, name=f"t{t}_gates")
            i, f, o = S.sigmoid(g[0]), S.sigmoid(g[1]), S.sigmoid(g[3])
            c = f * c + i * S.tanh(g[2])
            h = o * S.tanh(c)
            hs.append(h)
        out = S.Reshape(S.stack(*hs, axis=1), shape=(-1, H))
        out = S.FullyConnected(out, num_hidden=H, name="proj")
        return S.SoftmaxOutput(out, name="softmax"), {"data": (B, T, H), "h0": (B, H), "c0": (B, H)}
    raise ValueError(net)


def label_shape(net, B):
    return (B * 32,) if net == "lstm32" else (B,)


INPUTS = ("data", "softmax_label", "h0", "c0")


def measure(mx, net, mode, B):
    sym, shapes = build(mx, net, B)
    shapes = dict(shapes, softmax_label=label_shape(net, B))
    names = sym.list_arguments()
    req = "null" if mode == "infer" else {n: ("null" if n in INPUTS else "write") for n in names}
    t0 = time.perf_counter()
    exe = sym.simple_bind(mx.cpu(), grad_req=req, **shapes)
    bind_s = time.perf_counter() - t0
    m = re.search(r"Total (\d+) MB allocated", exe.debug_str())
    res = {"net": net, "mode": mode, "batch": B, "planned_MB_debug_str": int(m.group(1)) if m else None,
           "bind_s": round(bind_s, 3)}
    if hasattr(exe, "memory_stats"):
        st = exe.memory_stats()
        MB = float(1 << 20)
        res.update({"planned_MB": round(st["planned_bytes"] / MB, 2),
                    "lower_bound_MB": round(st["lower_bound_bytes"] / MB, 2),
                    "naive_MB": round(st["naive_bytes"] / MB, 2),
                    "ratio_to_bound": round(st["planned_bytes"] / max(st["lower_bound_bytes"], 1), 3),
                    "algorithm": st["algorithm"],
                    "candidates_MB": {k: round(v / MB, 2) for k, v in st["candidates"].items()},
                    "nodes": st["num_nodes"], "inplace_pairs": st.get("inplace_pairs"),
                    "mirrored_nodes": st.get("mirrored_nodes", 0)})
    return res


def apply_what_if(mx, names):
    """Planning-only experiments on operator definitions owned elsewhere (no kernel is run):
    'act-inplace': Activation may write its output over its input (its kernel allows it);
    'bn-inplace': BatchNorm may write its output over its input."""
    from ember.ops import registry
    for name in names:
        if name == "act-inplace":
            registry.get("Activation").inplace = [(0, 0)]
        elif name == "bn-inplace":
            registry.get("BatchNorm").inplace = [(0, 0)]
        else:
            raise SystemExit(f"unknown --what-if {name!r}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mx-module", default="ember")
    p.add_argument("--net", choices=NETS + ("all",), default="all")
    p.add_argument("--mode", choices=("infer", "train", "both"), default="both")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--no-mxnet", action="store_true", help="do not also run MXNet 1.9.1 from its venv")
    p.add_argument("--what-if", default="", help="comma list: act-inplace, bn-inplace (planning-only experiments)")
    args = p.parse_args()
    if args.mx_module == "ember":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    mx = importlib.import_module(args.mx_module)
    if args.what_if:
        apply_what_if(mx, [w for w in args.what_if.split(",") if w])
    nets = NETS if args.net == "all" else (args.net,)
    modes = ("infer", "train") if args.mode == "both" else (args.mode,)
    for net in nets:
        B = args.batch or BATCH.get(net, 32)
        for mode in modes:
            res = measure(mx, net, mode, B)
            res["module"] = args.mx_module
            if args.what_if:
                res["what_if"] = args.what_if
            if args.mx_module == "ember" and not args.no_mxnet and os.path.exists(MXNET_PY):
                env = dict(os.environ)
                if env.get("EMBER_BACKWARD_DO_MIRROR"):
                    env["MXNET_BACKWARD_DO_MIRROR"] = env["EMBER_BACKWARD_DO_MIRROR"]
                out = subprocess.run([MXNET_PY, os.path.abspath(__file__), "--mx-module", "mxnet", "--net", net,
                                      "--mode", mode, "--batch", str(B)], capture_output=True, text=True, env=env,
                                     timeout=600)
                lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
                res["mxnet_MB"] = json.loads(lines[-1])["planned_MB_debug_str"] if lines else \
                    f"failed: {out.stderr[-300:]}"
            print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
