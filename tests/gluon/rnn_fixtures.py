"""Replaying the gluon.rnn fixtures recorded from MXNet 1.9.1 (tests/data/make_gluon_rnn_fixtures.py).

A case's block is rebuilt from its expression, loads the `.params` file MXNet's `save_parameters`
wrote, runs the same call on the same input and begin states under `autograd.record()`, and
its output, final states and gradients (input, states, every parameter) must equal MXNet's.
"""
from __future__ import annotations

import glob
import os
import re

import numpy as np

import ember as mx
from ember import autograd
from ember.gluon import contrib, rnn  # noqa: F401  (used by the fixtures' expressions)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "gluon_rnn")
TOL = dict(rtol=1e-4, atol=2e-5)


def cases(kind: str):
    """Names of the recorded cases of one kind ('layer' or 'cell')."""
    found = []
    paths = [p for p in glob.glob(os.path.join(DATA, "*.npz")) if not os.path.basename(p).startswith("export-")]
    for path in sorted(paths):
        with np.load(path) as d:
            if str(d["kind"]) == kind:
                found.append(os.path.basename(path)[:-4])
    return found


def stack(container, *makers):
    """The stacked cell the generator builds: each maker's cell made inside the container's name scope."""
    with container.name_scope():
        for make in makers:
            container.add(make())
    return container


def numbered(name: str) -> str:
    """A parameter name without the per-process block counters ('lstm3_i2h_weight' -> 'lstm#_...')."""
    return re.sub(r"([a-z])\d+_", r"\1#_", name)


def build(case: str):
    """(block, recorded arrays) with MXNet's saved parameters loaded."""
    d = dict(np.load(os.path.join(DATA, case + ".npz")))
    block = eval(str(d["expr"]))
    block.load_parameters(os.path.join(DATA, case + ".params"))
    return block, d


def run(block, d, x, states):
    """The call the generator made: layer(x, states) or cell.unroll(...)."""
    if str(d["kind"]) == "layer":
        return block(x, states)
    layout = str(d["layout"])
    valid = mx.nd.array(d["valid_length"]) if "valid_length" in d else None
    return block.unroll(x.shape[layout.find("T")], x, begin_state=states, layout=layout, merge_outputs=True,
                        valid_length=valid)


def replay(case: str, hybridize: bool) -> None:
    """Assert ember reproduces the case: names, shapes, repr, outputs, states and all gradients."""
    block, d = build(case)
    if hybridize:
        block.hybridize()
    params = block.collect_params()
    assert [numbered(n) for n in params.keys()] == [numbered(str(n)) for n in d["names"]]
    assert [str(p.shape) for p in params.values()] == [str(s) for s in d["shapes"]]
    x = mx.nd.array(d["x"])
    n_states = int(d["n_states"])
    states = [mx.nd.array(d[f"state{i}"]) for i in range(n_states)]
    grads = bool(d["grads"])
    x.attach_grad()
    for s in states:
        s.attach_grad()
    with (autograd.record() if grads else autograd.predict_mode()):
        out, new_states = run(block, d, x, states)
        new_states = list(new_states) if isinstance(new_states, (list, tuple)) else [new_states]
        heads = [d["out_head"]] + [d[f"state{i}_head"] for i in range(n_states)]
        loss = sum((a * mx.nd.array(h)).sum() for a, h in zip([out] + new_states, heads))
    assert repr(block) == str(d["repr"])
    np.testing.assert_allclose(out.asnumpy(), d["out"], **TOL)
    assert len(new_states) == n_states
    for i, s in enumerate(new_states):
        np.testing.assert_allclose(s.asnumpy(), d[f"state{i}_out"], **TOL, err_msg=f"state {i}")
    if not grads:
        return
    loss.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), d["x_grad"], **TOL, err_msg="input gradient")
    for i, s in enumerate(states):
        np.testing.assert_allclose(s.grad.asnumpy(), d[f"state{i}_grad"], **TOL, err_msg=f"state {i} gradient")
    for i, (name, p) in enumerate(params.items()):
        np.testing.assert_allclose(p.grad().asnumpy(), d[f"param{i}_grad"], **TOL, err_msg=f"gradient of {name}")
