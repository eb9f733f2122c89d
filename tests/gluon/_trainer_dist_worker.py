"""One worker of the distributed gluon.Trainer tests (run under the launcher by test_trainer.py).

usage: python _trainer_dist_worker.py OUT_DIR KVSTORE OPTIMIZER UPDATE_ON_KVSTORE(1|0|default) CONTEXTS STEPS

After the first step the trainer saves its states and loads them back (training goes on from them).

Every worker starts from different weights (rank 0's must win), computes on each of its CONTEXTS
contexts a known gradient (`gradient(name, rank, ctx, step)`) and calls trainer.step(BATCH_SIZE).
Writes OUT_DIR/rank<r>.npz with every context's final weights and what the trainer decided.
"""
from __future__ import annotations

import os
import sys
import traceback

import numpy as np

import ember as mx
from ember import autograd, gluon

SHAPES = {"net_weight": (5, 3), "net_bias": (3,)}
LR_MULT = {"net_weight": 1.0, "net_bias": 0.5}
BATCH_SIZE = 8
OPTIMIZERS = {"sgd": {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01},
              "adam": {"learning_rate": 0.05}}


def gradient(name: str, rank: int, ctx: int, step: int) -> np.ndarray:
    """The gradient of `name` on context `ctx` of worker `rank` at `step` (reproducible by the test)."""
    seed = 1000 * step + 100 * rank + 10 * ctx + (1 if name == "net_bias" else 0)
    return np.random.RandomState(seed).randn(*SHAPES[name]).astype(np.float32)


def initial(name: str, rank: int) -> np.ndarray:
    return np.random.RandomState(7 + rank).randn(*SHAPES[name]).astype(np.float32) + (2.0 if name == "net_bias" else 0)


def main() -> None:
    out_dir, kv_type, optimizer, uok, contexts, steps = sys.argv[1:7]
    update_on_kvstore = {"1": True, "0": False, "default": None}[uok]
    ctxs = [mx.cpu(i) for i in range(int(contexts))]
    kv = mx.kv.create(kv_type)
    rank = kv.rank
    params = gluon.ParameterDict()
    for name, shape in SHAPES.items():
        p = params.get(name, shape=shape, lr_mult=LR_MULT[name])
        p.initialize(ctx=ctxs)
        for arr in p.list_data():  # each copy: ember's setitem does not copy across contexts
            arr[:] = mx.nd.array(initial(name, rank), ctx=arr.context)
    result = {}
    if kv_type == "dist_async":  # the servers update: refused before anything is sent
        try:
            gluon.Trainer(params, optimizer, kvstore=kv, update_on_kvstore=False).step(BATCH_SIZE)
            result["async_refusal"] = np.array("")
        except ValueError as e:
            result["async_refusal"] = np.array(str(e))
    trainer = gluon.Trainer(params, optimizer, dict(OPTIMIZERS[optimizer]), kvstore=kv,
                            update_on_kvstore=update_on_kvstore)
    calls = []
    pushpull = kv.pushpull

    def counting_pushpull(key, value, out=None, priority=0):
        calls.append(len(key) if isinstance(key, (list, tuple)) else 1)
        return pushpull(key, value, out=out, priority=priority)
    kv.pushpull = counting_pushpull
    for step in range(int(steps)):
        for c, ctx in enumerate(ctxs):
            with autograd.record():
                loss = mx.nd.add_n(*[(params[n].data(ctx) * mx.nd.array(gradient(n, rank, c, step), ctx=ctx)).sum()
                                     for n in SHAPES])
            loss.backward()
        trainer.step(BATCH_SIZE)
        if step == 0:  # the states (momentum) after one step go through a file and back
            states = os.path.join(out_dir, f"rank{rank}.states")
            trainer.save_states(states)
            trainer.load_states(states)
    result.update({f"{n}_ctx{c}": params[n].data(ctx).asnumpy() for n in SHAPES for c, ctx in enumerate(ctxs)})
    result["update_on_kvstore"] = np.array(bool(trainer._update_on_kvstore))
    result["pushpull_calls"] = np.array(calls)
    if trainer._update_on_kvstore:
        try:  # the store's optimizer was set with this batch size: another one must be refused
            trainer.step(BATCH_SIZE * 2, ignore_stale_grad=True)
            result["batch_change_error"] = np.array("")
        except UserWarning as e:
            result["batch_change_error"] = np.array(str(e))
    kv.barrier()
    np.savez(os.path.join(out_dir, f"rank{rank}.npz"), **result)


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(3)
