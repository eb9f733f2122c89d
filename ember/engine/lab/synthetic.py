"""Synthetic DAGs for experiments beyond what a recording on this machine covers.

Every generator returns a `Workload` whose ops are numbered in a valid push order, with costs in
seconds drawn from a seeded log-normal around `mean_cost_s` and one output buffer per op
(`out_nbytes`: live from the op's start to its last consumer's end).  Generation is vectorised,
so a million-op DAG takes about a second.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from .workload import Workload


def _costs(rng: np.random.Generator, n: int, mean_cost_s: float, spread: float) -> np.ndarray:
    if spread <= 0:
        return np.full(n, mean_cost_s)
    return mean_cost_s * rng.lognormal(-spread * spread / 2, spread, n)


def layered(layers: int, width: int, fan_in: int = 2, mean_cost_s: float = 1e-4, spread: float = 0.5,
            out_nbytes: int = 1 << 20, seed: int = 0) -> Workload:
    """`layers` layers of `width` ops; each op after the first layer reads `fan_in` random ops of the
    layer before (distinct when fan_in <= width)."""
    if layers < 1 or width < 1 or fan_in < 0:
        raise ValueError("layered: layers and width must be >= 1 and fan_in >= 0")
    rng = np.random.default_rng(seed)
    n = layers * width
    fan_in = min(fan_in, width)
    dst = np.repeat(np.arange(width, n, dtype=np.int64), fan_in)
    layer_start = (dst // width - 1) * width
    if fan_in == width:
        pick = np.tile(np.arange(width, dtype=np.int64), n - width)
    else:
        pick = rng.integers(0, width, size=len(dst))
    src = layer_start + pick
    return Workload.from_edges(_costs(rng, n, mean_cost_s, spread), src, dst, out_nbytes=np.full(n, out_nbytes))


def fork_join(stages: int, width: int, mean_cost_s: float = 1e-4, spread: float = 0.5,
              out_nbytes: int = 1 << 20, seed: int = 0) -> Workload:
    """A chain of `stages` fork-joins: a fork op, `width` independent ops, a join op (which is the
    next stage's fork)."""
    if stages < 1 or width < 1:
        raise ValueError("fork_join: stages and width must be >= 1")
    rng = np.random.default_rng(seed)
    per = width + 1
    n = stages * per + 1
    src, dst = [], []
    for s in range(stages):
        fork = s * per
        mids = fork + 1 + np.arange(width)
        join = fork + per
        src += [np.full(width, fork), mids]
        dst += [mids, np.full(width, join)]
    return Workload.from_edges(_costs(rng, n, mean_cost_s, spread), np.concatenate(src), np.concatenate(dst),
                               out_nbytes=np.full(n, out_nbytes))


class _Builder:
    """Ops added in push order with their predecessors, costs, queues and output sizes."""

    def __init__(self):
        self.src: List[int] = []
        self.dst: List[int] = []
        self.cost: List[float] = []
        self.queue: List[int] = []
        self.nbytes: List[int] = []
        self.names: List[str] = []

    def op(self, name: str, cost: float, preds=(), queue: int = 0, nbytes: int = 0) -> int:
        i = len(self.cost)
        self.src.extend(preds)
        self.dst.extend([i] * len(preds))
        self.cost.append(cost)
        self.queue.append(queue)
        self.nbytes.append(nbytes)
        self.names.append(name)
        return i

    def preds_of(self) -> List[List[int]]:
        preds: List[List[int]] = [[] for _ in self.cost]
        for s, d in zip(self.src, self.dst):
            preds[d].append(s)
        return preds

    def add_backward(self, upto: int, loss: int, scale: float = 2.0) -> None:
        """A backward op per forward op < upto (reverse order): it needs the gradients of the ops
        that consumed the forward op's output, and the forward op's own output."""
        preds = self.preds_of()
        consumers: List[List[int]] = [[] for _ in range(upto)]
        for d in range(upto):
            for s in preds[d]:
                consumers[s].append(d)
        grad = {}
        for f in range(upto - 1, -1, -1):
            deps = [f] + [grad[c] for c in consumers[f] if c in grad]
            if f == loss or consumers[f] or f in grad:
                grad[f] = self.op("grad:" + self.names[f], self.cost[f] * scale, deps, self.queue[f], self.nbytes[f])

    def build(self, seed_costs: Optional[np.ndarray] = None) -> Workload:
        cost = np.asarray(self.cost) if seed_costs is None else seed_costs
        return Workload.from_edges(cost, np.array(self.src, np.int64), np.array(self.dst, np.int64),
                                   queue=np.array(self.queue, np.int64), out_nbytes=np.array(self.nbytes, np.int64),
                                   names=self.names)


def transformer(blocks: int, heads: int = 8, seq: int = 512, d_model: int = 512, batch: int = 8,
                flops_per_s: float = 5e10, backward: bool = True) -> Workload:
    """Transformer blocks (layer norm, QKV projection, per-head scores/softmax/context, output
    projection, residual, layer norm, two-layer MLP, residual), costs from FLOPs at `flops_per_s`,
    and (backward=True) a backward op per forward op."""
    if blocks < 1 or heads < 1:
        raise ValueError("transformer: blocks and heads must be >= 1")
    b = _Builder()
    tok = batch * seq
    act = tok * d_model * 4
    dh = d_model // heads
    x = b.op("embed", tok * d_model / flops_per_s, (), 0, act)
    for k in range(blocks):
        ln1 = b.op(f"b{k}:ln1", 5 * tok * d_model / flops_per_s, (x,), 0, act)
        qkv = b.op(f"b{k}:qkv", 2 * tok * d_model * 3 * d_model / flops_per_s, (ln1,), 0, 3 * act)
        ctx = []
        for h in range(heads):
            s = b.op(f"b{k}:h{h}:scores", 2 * batch * seq * seq * dh / flops_per_s, (qkv,), 0, batch * seq * seq * 4)
            p = b.op(f"b{k}:h{h}:softmax", 5 * batch * seq * seq / flops_per_s, (s,), 0, batch * seq * seq * 4)
            ctx.append(b.op(f"b{k}:h{h}:context", 2 * batch * seq * seq * dh / flops_per_s, (p, qkv), 0,
                            act // heads))
        proj = b.op(f"b{k}:proj", 2 * tok * d_model * d_model / flops_per_s, ctx, 0, act)
        res1 = b.op(f"b{k}:res1", tok * d_model / flops_per_s, (proj, x), 0, act)
        ln2 = b.op(f"b{k}:ln2", 5 * tok * d_model / flops_per_s, (res1,), 0, act)
        ff1 = b.op(f"b{k}:ff1", 8 * tok * d_model * d_model / flops_per_s, (ln2,), 0, 4 * act)
        gelu = b.op(f"b{k}:gelu", 8 * tok * d_model / flops_per_s, (ff1,), 0, 4 * act)
        ff2 = b.op(f"b{k}:ff2", 8 * tok * d_model * d_model / flops_per_s, (gelu,), 0, act)
        x = b.op(f"b{k}:res2", tok * d_model / flops_per_s, (ff2, res1), 0, act)
    loss = b.op("loss", tok * d_model / flops_per_s, (x,), 0, 4)
    if backward:
        b.add_backward(loss + 1, loss)
    return b.build()


def pipeline(stages: int, microbatches: int, fwd_cost_s: float = 1e-3, bwd_cost_s: float = 2e-3,
             latency_s: float = 50e-6, act_nbytes: int = 1 << 22, bandwidth_Bps: float = 10e9) -> Workload:
    """Pipeline-parallel training (GPipe): stage s runs on queue s (give it one worker), transfers
    between stages on queue `stages` (the link).  Forward F(s, m) needs F(s-1, m) through a send;
    backward B(s, m) needs B(s+1, m) through a send and F(s, m).  Microbatch order on a stage comes
    from the policy (fifo/priority keep push order, which is GPipe's)."""
    if stages < 1 or microbatches < 1:
        raise ValueError("pipeline: stages and microbatches must be >= 1")
    b = _Builder()
    link = stages
    send_cost = latency_s + act_nbytes / bandwidth_Bps
    fwd = {}
    for m in range(microbatches):
        prev = None
        for s in range(stages):
            if prev is not None:
                prev = b.op(f"send:f{s - 1}->{s}:m{m}", send_cost, (prev,), link, act_nbytes)
            fwd[s, m] = prev = b.op(f"F{s}:m{m}", fwd_cost_s, () if prev is None else (prev,), s, act_nbytes)
    for m in range(microbatches):
        prev = None
        for s in range(stages - 1, -1, -1):
            deps = [fwd[s, m]]
            if prev is not None:
                deps.append(b.op(f"send:b{s + 1}->{s}:m{m}", send_cost, (prev,), link, act_nbytes))
            prev = b.op(f"B{s}:m{m}", bwd_cost_s, deps, s, act_nbytes)
    return b.build()


def chain_of(costs, nbytes=None) -> Workload:
    """A single chain (op i needs op i-1): the serial baseline."""
    costs = np.asarray(costs, dtype=np.float64)
    n = len(costs)
    src = np.arange(n - 1, dtype=np.int64)
    return Workload.from_edges(costs, src, src + 1, out_nbytes=None if nbytes is None else np.asarray(nbytes))

