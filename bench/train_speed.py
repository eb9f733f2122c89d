"""Training steps/s of LeNet (batch 64) and ResNet-18 (batch 8, 3x64x64): ember vs MXNet 1.9.1 vs PyTorch CPU.

One training step = forward + backward + an SGD update of every weight (lr 0.01, no momentum,
gradient rescaled by 1/batch, i.e. mean cross-entropy).  The MXNet-API path builds the net with
`mx.sym`, binds it with `simple_bind`, runs `forward(is_train=True)` + `backward()` and
`mx.nd.sgd_update(w, g, out=w)` on every argument with a gradient, as the anchors' train_step.py
does; the very same code runs on ember (`--mx-module ember`) and on MXNet (`--mx-module mxnet`).
The torch path is plain torch.nn (no torchvision) with in-place SGD on every parameter.

Every implementation starts from the same weights (drawn with numpy from each parameter's
MXNet name) and the same data, so `loss_first` (the loss of the first forward) must agree across
implementations; `loss_end` (after the same number of steps) should be close.

Nets: LeNet as /work/shared/anchors/bench/train_step.py builds it (conv20-5, relu, maxpool 2,
conv50-5, relu, maxpool 2, fc500, relu, fc10); ResNet-18 in the layout of MXNet gluon's model-zoo
resnet18_v1 (BasicBlockV1, 1000 classes; BatchNorm with gluon's eps 1e-5, momentum 0.9, learned gamma).

One process, one JSON line (the anchors' convention; median of --reps timed blocks of --iters steps):
    python3 bench/train_speed.py --impl mxnet --mx-module ember --model resnet18
    ~/.cache/ember-anchors/mxnet/bin/python bench/train_speed.py --impl mxnet --mx-module mxnet --model lenet
    ~/.cache/ember-anchors/torch/bin/python bench/train_speed.py --impl torch --model resnet18
Driver (run with ember's python): every implementation as a subprocess, interleaved round by round,
under each BLAS-thread setting, one JSON line per run, then a summary table with ratios:
    python3 bench/train_speed.py --all --rounds 3
    python3 bench/train_speed.py --all --rounds 3 --models lenet --threads 1 --impls ember,mxnet
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import zlib
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
VENVS = os.environ.get("ANCHOR_VENVS", os.path.expanduser("~/.cache/ember-anchors"))
PYTHONS = {"ember": sys.executable,
           "mxnet": os.path.join(VENVS, "mxnet", "bin", "python"),
           "torch": os.path.join(VENVS, "torch", "bin", "python")}
IMPL_ARGS = {"ember": ["--impl", "mxnet", "--mx-module", "ember"],
             "mxnet": ["--impl", "mxnet", "--mx-module", "mxnet"],
             "torch": ["--impl", "torch"]}
# batch, per-sample input shape, classes, default timed steps per repetition (keeps a process well under 60 s)
MODELS = {"lenet": (64, (1, 28, 28), 10, 30), "resnet18": (8, (3, 64, 64), 1000, 6)}
BLAS_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
ENV_KEYS = BLAS_VARS + ("EMBER_BLAS_THREADS", "MXNET_CPU_WORKER_NTHREADS", "EMBER_CPU_WORKER_NTHREADS",
                        "MXNET_ENGINE_TYPE", "EMBER_ENGINE_TYPE", "MXNET_SUBGRAPH_BACKEND",
                        "MXNET_EXEC_BULK_EXEC_TRAIN")
LR = 0.01
RESNET_STAGES = (64, 128, 256, 512)


# -- shared weights and data ---------------------------------------------------------------------
def init_value(name: str, shape: Tuple[int, ...]) -> np.ndarray:
    """The initial value of parameter `name`: the same in every implementation (seeded by the name)."""
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    if name.endswith("_weight"):
        fan_in = int(np.prod(shape[1:]))
        bound = np.sqrt(6.0 / fan_in)  # He-uniform: keeps the 18-layer net's activations in range
        return rng.uniform(-bound, bound, size=shape).astype(np.float32)
    if name.endswith(("_gamma", "_moving_var")):
        return np.ones(shape, np.float32)
    if name.endswith(("_bias", "_beta", "_moving_mean")):
        return np.zeros(shape, np.float32)
    raise ValueError(f"no initial value rule for parameter {name!r}")


def make_data(model: str) -> Tuple[np.ndarray, np.ndarray]:
    """Fixed random input batch and integer labels (as float32, the MXNet label convention)."""
    batch, shape, classes, _ = MODELS[model]
    rng = np.random.RandomState(0)
    x = rng.rand(batch, *shape).astype(np.float32)
    y = rng.randint(0, classes, size=(batch,)).astype(np.float32)
    return x, y


def cross_entropy(probs: np.ndarray, labels: np.ndarray) -> float:
    """Mean cross-entropy of softmax probabilities against integer labels."""
    picked = probs[np.arange(len(labels)), labels.astype(int)]
    return float(-np.log(picked + 1e-12).mean())


# -- MXNet-API nets ------------------------------------------------------------------------------
def mx_lenet(mx):
    """LeNet exactly as the anchors' train_step.py builds it."""
    S = mx.sym
    h = S.Convolution(S.var("data"), kernel=(5, 5), num_filter=20, name="conv1")
    h = S.Pooling(S.Activation(h, act_type="relu", name="relu1"), pool_type="max", kernel=(2, 2), stride=(2, 2),
                  name="pool1")
    h = S.Convolution(h, kernel=(5, 5), num_filter=50, name="conv2")
    h = S.Pooling(S.Activation(h, act_type="relu", name="relu2"), pool_type="max", kernel=(2, 2), stride=(2, 2),
                  name="pool2")
    h = S.Activation(S.FullyConnected(S.Flatten(h, name="flat"), num_hidden=500, name="fc1"), act_type="relu",
                     name="relu3")
    h = S.FullyConnected(h, num_hidden=10, name="fc2")
    return S.SoftmaxOutput(h, name="softmax")


def mx_resnet18(mx, classes: int = 1000):
    """gluon model-zoo resnet18_v1 (BasicBlockV1) as a symbol; parameter names match torch_resnet18."""
    S = mx.sym

    def conv_bn(x, name, channels, kernel, stride, pad, relu):
        x = S.Convolution(x, kernel=(kernel, kernel), stride=(stride, stride), pad=(pad, pad), num_filter=channels,
                          no_bias=True, name=name + "_conv")
        x = S.BatchNorm(x, fix_gamma=False, eps=1e-5, momentum=0.9, name=name + "_bn")
        return S.Activation(x, act_type="relu", name=name + "_relu") if relu else x

    h = conv_bn(S.var("data"), "stem", 64, 7, 2, 3, relu=True)
    h = S.Pooling(h, pool_type="max", kernel=(3, 3), stride=(2, 2), pad=(1, 1), name="stem_pool")
    cin = 64
    for stage, channels in enumerate(RESNET_STAGES):
        for blk in range(2):
            stride = 2 if (blk == 0 and stage > 0) else 1
            name = f"s{stage}b{blk}"
            body = conv_bn(h, name + "a", channels, 3, stride, 1, relu=True)
            body = conv_bn(body, name + "b", channels, 3, 1, 1, relu=False)
            down = stride != 1 or cin != channels
            short = conv_bn(h, name + "d", channels, 1, stride, 0, relu=False) if down else h
            h = S.Activation(body + short, act_type="relu", name=name + "_out")
            cin = channels
    h = S.Pooling(h, pool_type="avg", global_pool=True, kernel=(1, 1), name="gap")
    h = S.FullyConnected(S.Flatten(h, name="flat"), num_hidden=classes, name="fc")
    return S.SoftmaxOutput(h, name="softmax")


def mx_trainer(mx, model: str) -> Tuple[Callable[[], None], Callable[[], None], Callable[[], float], dict]:
    """(step, sync, loss_of_last_forward, info) for the MXNet-API path on package `mx`."""
    batch, _, classes, _ = MODELS[model]
    sym = mx_lenet(mx) if model == "lenet" else mx_resnet18(mx, classes)
    x, y = make_data(model)
    inputs = {"data": x.shape, "softmax_label": y.shape}
    req = {n: ("null" if n in inputs else "write") for n in sym.list_arguments()}
    exe = sym.simple_bind(mx.cpu(), grad_req=req, **inputs)
    for n, arr in exe.arg_dict.items():
        if n not in inputs:
            arr[:] = init_value(n, arr.shape)
    for n, arr in exe.aux_dict.items():
        arr[:] = init_value(n, arr.shape)
    exe.arg_dict["data"][:] = x
    exe.arg_dict["softmax_label"][:] = y
    params = [(exe.arg_dict[n], exe.grad_dict[n]) for n in sym.list_arguments() if req[n] == "write"]

    def step():
        exe.forward(is_train=True)
        exe.backward()
        for w, g in params:
            mx.nd.sgd_update(w, g, lr=LR, rescale_grad=1.0 / batch, out=w)

    def sync():
        mx.nd.waitall()

    def loss():
        return cross_entropy(exe.outputs[0].asnumpy(), y)

    info = {"version": mx.__version__, "n_params": len(params)}
    try:  # MXNet only: which native features (MKLDNN/oneDNN, OpenMP, BLAS) this wheel has
        feats = mx.runtime.Features()
        info["features"] = [f for f in ("MKLDNN", "OPENMP", "BLAS_OPEN", "BLAS_MKL") if feats.is_enabled(f)]
    except AttributeError:
        pass
    return step, sync, loss, info


# -- torch nets (plain torch.nn; parameter names map onto the MXNet ones) ------------------------
def torch_trainer(model: str) -> Tuple[Callable[[], None], Callable[[], None], Callable[[], float], dict]:
    """(step, sync, loss_of_last_forward, info) for plain torch.nn with in-place SGD."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    batch, shape, classes, _ = MODELS[model]

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleDict({"conv1": nn.Conv2d(1, 20, 5), "conv2": nn.Conv2d(20, 50, 5),
                                         "fc1": nn.Linear(800, 500), "fc2": nn.Linear(500, 10)})

        def forward(self, x):
            L = self.layers
            h = F.max_pool2d(F.relu(L["conv1"](x)), 2, 2)
            h = F.max_pool2d(F.relu(L["conv2"](h)), 2, 2)
            return L["fc2"](F.relu(L["fc1"](torch.flatten(h, 1))))

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            layers = {}

            def conv_bn(name, cin, cout, kernel, stride, pad):
                layers[name + "_conv"] = nn.Conv2d(cin, cout, kernel, stride, pad, bias=False)
                layers[name + "_bn"] = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)  # = MXNet momentum 0.9

            conv_bn("stem", shape[0], 64, 7, 2, 3)
            self.blocks = []
            cin = 64
            for stage, channels in enumerate(RESNET_STAGES):
                for blk in range(2):
                    stride = 2 if (blk == 0 and stage > 0) else 1
                    name = f"s{stage}b{blk}"
                    conv_bn(name + "a", cin, channels, 3, stride, 1)
                    conv_bn(name + "b", channels, channels, 3, 1, 1)
                    down = stride != 1 or cin != channels
                    if down:
                        conv_bn(name + "d", cin, channels, 1, stride, 0)
                    self.blocks.append((name, down))
                    cin = channels
            layers["fc"] = nn.Linear(512, classes)
            self.layers = nn.ModuleDict(layers)

        def cbn(self, x, name):
            return self.layers[name + "_bn"](self.layers[name + "_conv"](x))

        def forward(self, x):
            h = F.max_pool2d(F.relu(self.cbn(x, "stem")), 3, 2, 1)
            for name, down in self.blocks:
                body = self.cbn(F.relu(self.cbn(h, name + "a")), name + "b")
                h = F.relu(body + (self.cbn(h, name + "d") if down else h))
            return self.layers["fc"](torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))

    torch.manual_seed(0)
    net = LeNet() if model == "lenet" else ResNet18()
    with torch.no_grad():
        for lname, mod in net.layers.items():
            if isinstance(mod, nn.BatchNorm2d):
                pairs = [(mod.weight, "_gamma"), (mod.bias, "_beta"), (mod.running_mean, "_moving_mean"),
                         (mod.running_var, "_moving_var")]
            else:
                pairs = [(mod.weight, "_weight")] + ([(mod.bias, "_bias")] if mod.bias is not None else [])
            for tensor, suffix in pairs:
                tensor.copy_(torch.from_numpy(init_value(lname + suffix, tuple(tensor.shape))))
    net.train()
    x_np, y_np = make_data(model)
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np).long()
    lossf = nn.CrossEntropyLoss()
    plist = list(net.parameters())
    last = {}

    def step():
        loss = lossf(net(x), y)
        for q in plist:
            q.grad = None
        loss.backward()
        with torch.no_grad():
            for q in plist:
                q.add_(q.grad, alpha=-LR)
        last["loss"] = loss.detach()

    def sync():
        pass  # eager CPU torch is synchronous

    def loss():
        return float(last["loss"])

    info = {"version": torch.__version__, "n_params": len(plist), "torch_num_threads": torch.get_num_threads()}
    return step, sync, loss, info


# -- one measuring process -----------------------------------------------------------------------
def blas_info() -> Optional[list]:
    """BLAS/OpenMP pools of this process and their thread counts (threadpoolctl, where installed)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    return [{"api": p.get("user_api"), "lib": p.get("internal_api"), "threads": p.get("num_threads")}
            for p in threadpool_info()]


def source_revision(module) -> Optional[str]:
    """git commit of the package's checkout, '+dirty' when its files differ (the tree changes under benchmarks)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(module.__file__)))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", module.__name__], cwd=root,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:  # a snapshot outside git (git archive + REVISION file, as bench/README.md shows)
        try:
            with open(os.path.join(root, "REVISION")) as f:
                return f.read().strip() + " (snapshot)"
        except OSError:
            return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def measure(args) -> dict:
    """Warm up, then time --reps blocks of --iters steps; one JSON-able record."""
    t_start = time.perf_counter()
    if args.impl == "mxnet":
        import importlib
        mx = importlib.import_module(args.mx_module)
        step, sync, loss, info = mx_trainer(mx, args.model)
        if args.mx_module != "mxnet":
            info["revision"] = source_revision(mx)
    else:
        step, sync, loss, info = torch_trainer(args.model)
    t_setup = time.perf_counter() - t_start
    step()
    sync()
    loss_first = loss()
    for _ in range(args.warmup - 1):
        step()
    sync()
    iters = args.iters or MODELS[args.model][3]
    times = []
    for _ in range(args.reps):
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        sync()
        times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    batch = MODELS[args.model][0]
    results = {"steps_per_s": round(iters / t, 3), "samples_per_s": round(batch * iters / t, 1),
               "ms_per_step": round(t / iters * 1e3, 2), "steps_per_s_all": [round(iters / s, 3) for s in times],
               "loss_first": round(loss_first, 5), "loss_end": round(loss(), 5),
               "steps_total": args.warmup + args.reps * iters, "setup_s": round(t_setup, 2)}
    return {"bench": "train_speed", "impl": args.impl,
            "module": args.mx_module if args.impl == "mxnet" else "torch", "model": args.model, "batch": batch,
            "iters": iters, "reps": args.reps, "env": {k: os.environ[k] for k in ENV_KEYS if k in os.environ},
            "blas": blas_info(), "python": platform.python_version(), "ncpu": os.cpu_count(), **info,
            "results": results}


# -- driver ----------------------------------------------------------------------------------------
def thread_env(setting: str, extra: List[str] = ()) -> Dict[str, str]:
    """The environment for one BLAS-thread setting ('unset' drops the variables, a number sets all three),
    plus the driver's --env NAME=VALUE entries."""
    env = {k: v for k, v in os.environ.items() if k not in BLAS_VARS}
    if setting != "unset":
        if not setting.isdigit() or int(setting) < 1:
            raise ValueError(f"--threads entries must be 'unset' or a positive integer, got {setting!r}")
        env.update({k: setting for k in BLAS_VARS})
    for item in extra:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--env takes NAME=VALUE, got {item!r}")
        env[name] = value
    return env


def run_one(impl: str, model: str, setting: str, args) -> dict:
    """Launch one measuring process; its JSON record, or a 'failed' record with the stderr tail."""
    py = PYTHONS[impl]
    tag = {"impl_name": impl, "model": model, "threads": setting}
    if not (os.path.exists(py) and os.access(py, os.X_OK)):
        return {"skipped": impl, "why": f"no interpreter {py}", **tag}
    cmd = [py, os.path.abspath(__file__), *IMPL_ARGS[impl], "--model", model, "--reps", str(args.reps),
           "--warmup", str(args.warmup)] + (["--iters", str(args.iters)] if args.iters else [])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=thread_env(setting, args.env),
                           cwd=HERE)
    except subprocess.TimeoutExpired as e:
        return {"failed": impl, "why": f"timeout after {args.timeout} s", **tag,
                "stderr_tail": (e.stderr or b"")[-3000:].decode(errors="replace")
                if isinstance(e.stderr, bytes) else (e.stderr or "")[-3000:]}
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0 or not lines:
        return {"failed": impl, "rc": r.returncode, **tag, "stderr_tail": r.stderr[-3000:]}
    rec = json.loads(lines[-1])
    rec.update(tag)
    return rec


def summarize(records: List[dict], impls: List[str]) -> str:
    """A text table: per thread setting and model, median steps/s over rounds per impl, and ember's ratios."""
    out = []
    keys = sorted({(r["threads"], r["model"]) for r in records}, key=lambda k: (k[0], list(MODELS).index(k[1])))
    head = f"{'threads':>7} {'model':>8} " + " ".join(f"{i + ' st/s':>12} {i + ' loss0':>12}" for i in impls)
    head += "  ember/mxnet  ember/torch  loss0"
    out.append(head)
    for setting, model in keys:
        med, loss0 = {}, {}
        for impl in impls:
            ok = [r for r in records if r.get("impl_name") == impl and r["threads"] == setting
                  and r["model"] == model and "results" in r]
            if ok:
                med[impl] = statistics.median(r["results"]["steps_per_s"] for r in ok)
                loss0[impl] = ok[0]["results"]["loss_first"]
        row = f"{setting:>7} {model:>8} "
        row += " ".join(f"{med[i]:12.2f} {loss0[i]:12.4f}" if i in med else f"{'failed':>12} {'-':>12}" for i in impls)
        for other in ("mxnet", "torch"):
            ratio = med["ember"] / med[other] if ("ember" in med and other in med) else None
            row += f"  {ratio:11.2f}" if ratio is not None else f"  {'-':>11}"
        spread = max(loss0.values()) - min(loss0.values()) if loss0 else 0.0
        row += "  agree" if spread <= 1e-3 * max(1.0, max(loss0.values(), default=1.0)) else f"  DIFFER by {spread:.4g}"
        out.append(row)
    out.append("st/s = training steps per second, median over rounds of each process's median; "
               "loss0 = loss of the first forward (same weights and data everywhere, so it must agree)")
    return "\n".join(out)


def drive(args) -> int:
    """Run every (thread setting, model, impl) as a subprocess, interleaved round by round."""
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    settings = [s.strip() for s in args.threads.split(",") if s.strip()]
    for i in impls:
        if i not in PYTHONS:
            raise SystemExit(f"unknown implementation {i!r}; choose from {sorted(PYTHONS)}")
    for m in models:
        if m not in MODELS:
            raise SystemExit(f"unknown model {m!r}; choose from {sorted(MODELS)}")
    for s in settings:
        thread_env(s, args.env)  # validates
    records = []
    for rnd in range(args.rounds):
        for setting in settings:
            for model in models:
                # rotate the order each round so no implementation always runs first (caches, load)
                order = impls[rnd % len(impls):] + impls[:rnd % len(impls)]
                for impl in order:
                    rec = run_one(impl, model, setting, args)
                    rec["round"] = rnd
                    print(json.dumps(rec))
                    sys.stdout.flush()
                    records.append(rec)
    print(summarize(records, impls))
    return 0 if all("results" in r for r in records) else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impl", choices=("mxnet", "torch"), default="mxnet")
    p.add_argument("--mx-module", default="mxnet", help="import name of the MXNet-API package (--impl mxnet)")
    p.add_argument("--model", choices=tuple(MODELS), default="lenet")
    p.add_argument("--reps", type=int, default=3, help="timed repetitions; the median is reported")
    p.add_argument("--iters", type=int, default=0, help="steps per repetition (0: the model's default)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (the first one gives loss_first)")
    p.add_argument("--all", action="store_true", help="driver: run every implementation as a subprocess")
    p.add_argument("--rounds", type=int, default=3, help="driver: interleaved rounds")
    p.add_argument("--impls", default="ember,mxnet,torch", help="driver: implementations, comma-separated")
    p.add_argument("--models", default="lenet,resnet18", help="driver: models, comma-separated")
    p.add_argument("--threads", default="1,unset",
                   help="driver: BLAS thread settings (OMP/OPENBLAS/MKL_NUM_THREADS), comma-separated; "
                        "'unset' drops them")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="driver: extra environment variable for every process (repeatable)")
    p.add_argument("--timeout", type=float, default=180, help="driver: seconds per process before it counts as failed")
    args = p.parse_args(argv)
    if args.reps < 1 or args.warmup < 1 or args.iters < 0 or args.rounds < 1:
        p.error("--reps, --warmup and --rounds must be >= 1 and --iters >= 0")
    if args.all:
        try:
            return drive(args)
        except ValueError as e:  # a malformed --threads/--env entry
            p.error(str(e))
    print(json.dumps(measure(args)))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
