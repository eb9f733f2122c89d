"""Semantics compared with real MXNet 1.9.1 (skipped when its venv is not installed).

The same small program runs under MXNet and under ember and must print the same
results: reshape special values, view-vs-copy indexing, dtype defaults, in-place
aliasing through views, comparison dtypes, autograd of a composed expression.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

MXNET_PYTHON = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")

PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    if sys.argv[1] == "mxnet":
        import mxnet as mx
    else:
        import ember as mx
    out = {}
    base = mx.nd.array(np.arange(24).reshape(2, 3, 4))
    for spec in [(0, -1), (-2,), (-3, 4), (-4, 1, 2, -2), (2, -4, -1, 3, 4), (-1, 0), (6, -1, 2)]:
        out["reshape%s" % (spec,)] = list(base.reshape(spec).shape)
    out["reshape_rev"] = list(mx.nd.zeros((10, 5, 4)).reshape((-1, 0), reverse=True).shape)
    x = mx.nd.array(np.arange(12).reshape(3, 4))
    for name, key in [("row", 1), ("rows", slice(1, 3)), ("col", (slice(None), 2)), ("elem", (1, 2)),
                      ("step", slice(None, None, 2)), ("none", (None, 1))]:
        y = x[key]
        out["shape_" + name] = list(y.shape)
    v = x[1:3]
    v[:] = 0
    c = x[:, 1]
    c[:] = 99
    out["after_writes"] = x.asnumpy().tolist()
    out["dtype_list"] = np.dtype(mx.nd.array([1, 2]).dtype).name
    out["dtype_np_int"] = np.dtype(mx.nd.array(np.arange(3)).dtype).name
    out["dtype_cmp"] = np.dtype((x > 3).dtype).name
    out["cmp"] = (x > 3).asnumpy().tolist()
    out["rand_shape"] = list(mx.nd.random.uniform().shape)
    a = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    a += mx.nd.array([10.0, 20.0])
    a[0] = 7
    a[:, 1] = mx.nd.array([5.0, 6.0])
    out["inplace"] = a.asnumpy().tolist()
    w = mx.nd.array([0.5, 1.5, 2.5])
    w.attach_grad()
    with mx.autograd.record():
        z = (w * w + 2 * w) / (w + 1) - w ** 2
    z.backward()
    out["grad"] = [round(float(g), 5) for g in w.grad.asnumpy()]
    print(json.dumps(out, sort_keys=True))
""")


def _run(python, which):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    res = subprocess.run([python, "-c", PROGRAM, which], capture_output=True, text=True, timeout=120,
                         env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not os.path.exists(MXNET_PYTHON), reason="MXNet 1.9.1 venv not installed")
def test_same_results_as_mxnet():
    want = _run(MXNET_PYTHON, "mxnet")
    got = _run(sys.executable, "ember")
    diffs = {k: (got.get(k), want[k]) for k in want if got.get(k) != want[k]}
    assert not diffs, diffs
