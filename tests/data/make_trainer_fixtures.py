"""Write gluon.Trainer fixtures with real MXNet 1.9.1: state files and the weights around them.

Run with the MXNet venv (see tests/data/README.md):
    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_trainer_fixtures.py
For each case, two parameters (`net_weight` (3, 4) and `net_bias` (4,), the bias with lr_mult 2
and wd_mult 0.5) start from `w0` (RandomState(11)) and a gluon.Trainer takes STEPS_BEFORE steps,
then saves its states (`trainer/CASE.states`, MXNet's pickled format), then STEPS_AFTER more.
The loss of step s on context c is sum(p * g_s * (c + 1)) over the parameters, so the gradient
is exactly g_s * (c + 1) (`grad_S_NAME`, RandomState(12)); `after_save_NAME` and `final_NAME`
are MXNet's weights at the save and at the end, all in `trainer/CASE.npz`.
"""
import json
import os

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trainer")
STEPS_BEFORE, STEPS_AFTER = 3, 2
BATCH_SIZE = 4
SHAPES = {"net_weight": (3, 4), "net_bias": (4,)}
MULTS = {"net_weight": (1.0, 1.0), "net_bias": (2.0, 0.5)}  # (lr_mult, wd_mult)

# name -> (optimizer, its parameters (the scheduler as [class, kwargs]), number of contexts)
CASES = {
    "sgd_momentum": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}, 1),
    "adam_factor_schedule": ("adam", {"learning_rate": 0.05, "wd": 0.001,
                                      "lr_scheduler": ["FactorScheduler", {"step": 2, "factor": 0.5,
                                                                           "base_lr": 0.05}]}, 1),
    "rmsprop_centered_clip": ("rmsprop", {"learning_rate": 0.01, "centered": True, "clip_gradient": 0.5}, 1),
    "adagrad": ("adagrad", {"learning_rate": 0.1, "wd": 0.01}, 1),
    # two contexts, 'device' store: MXNet updates on the kvstore and saves the store's states
    "sgd_momentum_two_contexts_kvstore": ("sgd", {"learning_rate": 0.1, "momentum": 0.9}, 2),
}


def optimizer_params(params):
    params = dict(params)
    if "lr_scheduler" in params:
        cls, kwargs = params["lr_scheduler"]
        params["lr_scheduler"] = getattr(mx.lr_scheduler, cls)(**kwargs)
    return params


def make_case(name, optimizer, params, num_ctx):
    ctxs = [mx.cpu(i) for i in range(num_ctx)]
    rng_w, rng_g = np.random.RandomState(11), np.random.RandomState(12)
    w0 = {k: rng_w.randn(*s).astype(np.float32) for k, s in SHAPES.items()}
    steps = STEPS_BEFORE + STEPS_AFTER
    grads = [{k: rng_g.randn(*s).astype(np.float32) for k, s in SHAPES.items()} for _ in range(steps)]
    pdict = gluon.ParameterDict()
    for k, s in SHAPES.items():
        p = pdict.get(k, shape=s, lr_mult=MULTS[k][0], wd_mult=MULTS[k][1])
        p.initialize(ctx=ctxs)
        p.set_data(mx.nd.array(w0[k]))
    trainer = gluon.Trainer(pdict, optimizer, optimizer_params(params))
    record = {f"w0_{k}": v for k, v in w0.items()}
    for s in range(steps):
        for c, ctx in enumerate(ctxs):
            with autograd.record():
                loss = mx.nd.add_n(*[(pdict[k].data(ctx) * mx.nd.array(grads[s][k] * (c + 1), ctx=ctx)).sum()
                                     for k in SHAPES])
            loss.backward()
        trainer.step(BATCH_SIZE)
        for k in SHAPES:
            record[f"grad_{s}_{k}"] = grads[s][k]
        if s == STEPS_BEFORE - 1:
            trainer.save_states(os.path.join(OUT, name + ".states"))
            record.update({f"after_save_{k}": pdict[k].data(ctxs[0]).asnumpy() for k in SHAPES})
    record.update({f"final_{k}": pdict[k].data(ctxs[0]).asnumpy() for k in SHAPES})
    meta = {"optimizer": optimizer, "params": params, "contexts": num_ctx, "batch_size": BATCH_SIZE,
            "steps_before": STEPS_BEFORE, "steps_after": STEPS_AFTER, "mults": MULTS,
            "update_on_kvstore": bool(trainer._update_on_kvstore)}
    record["meta"] = np.array(json.dumps(meta))
    np.savez(os.path.join(OUT, name + ".npz"), **record)
    print(f"{name}: {os.path.getsize(os.path.join(OUT, name + '.states'))} bytes of states, "
          f"update_on_kvstore={trainer._update_on_kvstore}")


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (optimizer, params, num_ctx) in CASES.items():
        make_case(name, optimizer, params, num_ctx)


if __name__ == "__main__":
    main()
