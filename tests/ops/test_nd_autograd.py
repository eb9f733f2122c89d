"""The registry gradients, run through mx.nd autograd, equal the eager numpy evaluation.

test_*.py check each gradient function against finite differences with numpy arrays; this
file checks that the same functions work unchanged when F is mx.nd (attributes passed back
through the generated mx.nd functions, multi-output backward ops, hidden outputs).
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import grads, run  # noqa: E402

import ember as mx  # noqa: E402
from ember import ops  # noqa: E402

rng = np.random.default_rng(0)
A = rng.uniform(0.5, 2, (3, 4))
B = rng.uniform(0.5, 2, (4,))

CASES = [
    ("broadcast_power", [A, B], {}), ("broadcast_maximum", [A, B], {}), ("_rdiv_scalar", [A], {"scalar": 2.0}),
    ("exp", [A], {}), ("sum", [A], {"axis": 1, "keepdims": True}), ("mean", [A], {"axis": (0,), "exclude": True}),
    ("max", [A], {}), ("norm", [A], {"ord": 1, "axis": 1}), ("Reshape", [A], {"shape": (-1, 2)}),
    ("transpose", [A], {"axes": (1, 0)}), ("tile", [A], {"reps": (2, 1)}), ("repeat", [A], {"repeats": 2, "axis": 1}),
    ("broadcast_to", [A[:1]], {"shape": (3, 4)}), ("slice", [A], {"begin": (1, None), "end": (3, None)}),
    ("slice_axis", [A], {"axis": 1, "begin": 1, "end": None}), ("take", [A, np.array([2.0, 0.0])], {"axis": 1}),
    ("pick", [A, np.array([0.0, 1.0, 3.0])], {"axis": 1}), ("Concat", [A, A], {"num_args": 2, "dim": 0}),
    ("stack", [A, A], {"num_args": 2, "axis": 1}), ("SliceChannel", [A], {"num_outputs": 2, "axis": 1}),
    ("dot", [A, A], {"transpose_b": True}), ("batch_dot", [A[None], A.T[None].copy()], {}),
    ("topk", [A], {"k": 2, "ret_typ": "value"}), ("sort", [A], {"axis": 0}), ("cumsum", [A], {"axis": 1}),
    ("clip", [A], {"a_min": 0.8, "a_max": 1.5}), ("where", [(A > 1).astype(np.float64), A, -A], {}),
    ("gather_nd", [A, np.array([[0.0, 2.0], [1.0, 3.0]])], {}),
    ("Pad", [A[None, None]], {"mode": "reflect", "pad_width": (0, 0, 0, 0, 1, 1, 2, 2)}),
    ("moments", [A], {"axes": (1,)}), ("linalg_gemm2", [A, A], {"transpose_a": True}), ("diag", [A], {"k": 1}),
    ("SequenceMask", [A[:, :, None], np.array([1.0, 2.0, 3.0, 1.0])], {"use_sequence_length": True}),
]


@pytest.mark.parametrize("name,inputs,attrs", CASES, ids=[c[0] for c in CASES])
def test_autograd_through_nd_matches_numpy(name, inputs, attrs):
    op = ops.get(name)
    outs = run(name, inputs, attrs, all_outputs=True)
    nvis = op.visible_outputs(op.parse_attrs(attrs))
    ograds = [rng.standard_normal(o.shape) for o in outs[:nvis]]
    want = grads(name, inputs, attrs, ograds + [np.zeros_like(o) for o in outs[nvis:]])
    xs = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
    for x in xs:
        x.attach_grad()
    with mx.autograd.record():
        res = getattr(mx.nd, name)(*xs, **attrs)
    res = list(res) if isinstance(res, (list, tuple)) else [res]
    mx.autograd.backward(res, [mx.nd.array(g, dtype=r.dtype) for g, r in zip(ograds, res)])
    for k, (x, w) in enumerate(zip(xs, want)):
        if w is None:
            continue  # index / condition / length inputs have no gradient
        np.testing.assert_allclose(x.grad.asnumpy(), w, rtol=1e-6, atol=1e-9, err_msg=f"{name}: input {k}")
