"""Bench: gluon.rnn.LSTM training throughput (samples/s), hybridized, against PyTorch's nn.LSTM.

Model (issue 14's figure): embedding-free LSTM language-model step on dense inputs — a 2-layer
LSTM, 256 hidden units, sequence 35, batch 32, input size 256 (TNC), a Dense(256 -> vocab 1000)
decoder on every step, softmax cross-entropy against random labels, SGD lr 0.01.
mxnet API (`--impl mxnet --mx-module ember|mxnet`): gluon.rnn.LSTM + nn.Dense(flatten=False) in a
HybridBlock, `hybridize(static_alloc=True, static_shape=True)` unless --hybridize 0,
`autograd.record()` + `loss.backward()` + `gluon.Trainer('sgd').step(B)`; states start at zero
each step (no truncated-BPTT carry, so both sides do the same work).  torch (`--impl torch`): the
same model as nn.LSTM + nn.Linear, CrossEntropyLoss, torch.optim.SGD.  `waitall` once per timed
block.  Prints one JSON line.

Correctness check: every implementation starts from the same weights (each drawn from numpy with a
seed made from its role, `l0_i2h_weight`, `decoder_weight`, ...: MXNet's and torch's LSTMs share the
i, f, g, o gate order; biases 0), so `loss_first` (the first step's loss, before any update) must
agree across all three to ~1e-5, and `loss_after_warmup` between ember and MXNet (the same code and
updates; torch's mean-over-all loss scales its gradient by B/T against Gluon's, so it drifts apart).

    python bench/gluon_lstm.py --impl mxnet --mx-module ember
    ~/.cache/ember-anchors/mxnet/bin/python bench/gluon_lstm.py --impl mxnet --mx-module mxnet
    ~/.cache/ember-anchors/torch/bin/python bench/gluon_lstm.py --impl torch
"""
import argparse
import importlib
import json
import os
import platform
import re
import statistics
import sys
import time
import zlib

import numpy as np

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--impl", choices=("mxnet", "torch"), default="mxnet")
p.add_argument("--mx-module", default="mxnet", help="import name of the MXNet-compatible package (--impl mxnet)")
p.add_argument("--reps", type=int, default=5, help="timed repetitions; the median is reported")
p.add_argument("--iters", type=int, default=10, help="training steps per timed repetition")
p.add_argument("--warmup", type=int, default=3, help="untimed steps first (at least 1)")
p.add_argument("--hybridize", type=int, default=1, help="mxnet API only: 1 = hybridize(static_alloc, static_shape)")
p.add_argument("--layers", type=int, default=2)
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--seq", type=int, default=35)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--vocab", type=int, default=1000)
args = p.parse_args()
if args.warmup < 1:
    p.error("--warmup must be at least 1 (the first step's loss is the correctness check)")
T, B, H, V, L = args.seq, args.batch, args.hidden, args.vocab, args.layers
LR = 0.01
rng = np.random.RandomState(0)
x_np = rng.standard_normal((T, B, H)).astype(np.float32)
y_np = rng.randint(0, V, size=(T, B)).astype(np.float32)
extra = {}
ROLE = re.compile(r"l(\d+)_(i2h|h2h)_(weight|bias)$")


def seeded(role: str, shape) -> np.ndarray:
    """The starting value of the parameter playing `role` (the same on every implementation)."""
    if role.endswith("bias"):
        return np.zeros(shape, np.float32)
    k = 4.0 / np.sqrt(H)  # large enough that the outputs, so the loss, depend clearly on every weight
    return np.random.RandomState(zlib.crc32(role.encode())).uniform(-k, k, shape).astype(np.float32)


def mx_role(name: str) -> str:
    """`languagemodel0_lstm0_l1_h2h_weight` -> `l1_h2h_weight`; the Dense's -> `decoder_weight`."""
    m = ROLE.search(name)
    return m.group(0) if m else "decoder_" + name.rsplit("_", 1)[1]

if args.impl == "mxnet":
    if args.mx_module == "ember":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    mx = importlib.import_module(args.mx_module)
    gluon, autograd = mx.gluon, mx.autograd
    version = mx.__version__
    mx.random.seed(0)

    class LanguageModel(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.rnn = gluon.rnn.LSTM(H, L, input_size=H)
                self.decoder = gluon.nn.Dense(V, flatten=False, in_units=H)

        def hybrid_forward(self, F, x):
            return self.decoder(self.rnn(x))

    class Seeded(mx.init.Initializer):
        def _init_weight(self, name, arr):
            arr[:] = seeded(mx_role(str(name)), arr.shape)

    net = LanguageModel()
    net.initialize(Seeded())
    if args.hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})
    lossf = gluon.loss.SoftmaxCrossEntropyLoss()
    x, y = mx.nd.array(x_np), mx.nd.array(y_np)
    last = {}

    def step():
        with autograd.record():
            loss = lossf(net(x), y)
        loss.backward()
        trainer.step(B)
        last["loss"] = loss

    def sync():
        mx.nd.waitall()

    def loss_probe():
        return float(last["loss"].mean().asscalar())
    extra["hybridize"] = bool(args.hybridize)
else:
    import torch
    import torch.nn as tnn
    version = torch.__version__
    extra["torch_num_threads"] = torch.get_num_threads()
    torch.manual_seed(0)

    class LanguageModel(tnn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = tnn.LSTM(H, H, L)
            self.decoder = tnn.Linear(H, V)

        def forward(self, x):
            return self.decoder(self.rnn(x)[0])

    net = LanguageModel()
    with torch.no_grad():
        for name, param in net.named_parameters():  # weight_ih_l0 -> l0_i2h_weight, decoder.weight -> decoder_weight
            m = re.match(r"rnn\.(weight|bias)_(ih|hh)_l(\d+)$", name)
            role = (f"l{m.group(3)}_{'i2h' if m.group(2) == 'ih' else 'h2h'}_{m.group(1)}" if m
                    else name.replace(".", "_"))
            param.copy_(torch.from_numpy(seeded(role, tuple(param.shape))))
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    lossf = tnn.CrossEntropyLoss()
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np).long()
    last = {}

    def step():
        opt.zero_grad(set_to_none=True)
        loss = lossf(net(x).reshape(T * B, V), y.reshape(T * B))
        loss.backward()
        opt.step()
        last["loss"] = loss.detach()

    def sync():
        pass

    def loss_probe():
        return float(last["loss"])

step()
sync()
loss_first = loss_probe()
for _ in range(args.warmup - 1):
    step()
sync()
loss0 = loss_probe()
times = []
for _ in range(args.reps):
    sync()
    t0 = time.perf_counter()
    for _ in range(args.iters):
        step()
    sync()
    times.append(time.perf_counter() - t0)
t = statistics.median(times)
record = {
    "bench": "gluon_lstm", "impl": args.impl, "module": args.mx_module if args.impl == "mxnet" else args.impl,
    "version": version, "python": platform.python_version(), "ncpu": os.cpu_count(),
    "layers": L, "hidden": H, "seq": T, "batch": B, "vocab": V, "iters": args.iters, **extra,
    "results": {"samples_per_s": round(B * args.iters / t, 1), "ms_per_step": round(t / args.iters * 1e3, 3),
                "samples_per_s_all": [round(B * args.iters / v, 1) for v in times],
                "loss_first": round(loss_first, 6), "loss_after_warmup": round(loss0, 6),
                "loss_end": round(loss_probe(), 6)},
}
print(json.dumps(record))
