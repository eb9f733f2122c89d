"""_contrib_interleaved_matmul_*: numpy references of the per-head products, finite differences, shapes."""
import numpy as np
import pytest

import ember as mx
from ember.base import ShapeError

from ._gradcheck import check_grad, run

RNG = np.random.default_rng(0)


def _heads(x, h, parts):
    s, b, f = x.shape
    d = f // (h * parts)
    return x.reshape(s, b, h, parts, d)  # [..., j, :] is projection j of head h


def test_selfatt_qk_and_valatt_reference():
    s, b, h, d = 4, 2, 2, 3
    x = RNG.standard_normal((s, b, h * 3 * d))
    p = _heads(x, h, 3)
    qk = run("_contrib_interleaved_matmul_selfatt_qk", [x], {"heads": h})
    for bi in range(b):
        for hi in range(h):
            want = p[:, bi, hi, 0] @ p[:, bi, hi, 1].T / np.sqrt(d)
            np.testing.assert_allclose(qk[bi * h + hi], want, rtol=1e-12)
    att = RNG.standard_normal((b * h, s, s))
    out = run("_contrib_interleaved_matmul_selfatt_valatt", [x, att], {"heads": h})
    assert out.shape == (s, b, h * d)
    for bi in range(b):
        for hi in range(h):
            np.testing.assert_allclose(out[:, bi, hi * d:(hi + 1) * d], att[bi * h + hi] @ p[:, bi, hi, 2], rtol=1e-12)
    check_grad("_contrib_interleaved_matmul_selfatt_qk", [x], {"heads": h})
    check_grad("_contrib_interleaved_matmul_selfatt_valatt", [x, att], {"heads": h})


def test_encdec_reference_and_gradients():
    qs, ks, b, h, d = 3, 4, 2, 2, 2
    q = RNG.standard_normal((qs, b, h * d))
    kv = RNG.standard_normal((ks, b, h * 2 * d))
    p = _heads(kv, h, 2)
    qk = run("_contrib_interleaved_matmul_encdec_qk", [q, kv], {"heads": h})
    assert qk.shape == (b * h, qs, ks)
    np.testing.assert_allclose(qk[1], q[:, 0, d:] @ p[:, 0, 1, 0].T / np.sqrt(d), rtol=1e-12)
    att = RNG.standard_normal((b * h, qs, ks))
    out = run("_contrib_interleaved_matmul_encdec_valatt", [kv, att], {"heads": h})
    np.testing.assert_allclose(out[:, 1, :d], att[2] @ p[:, 1, 0, 1], rtol=1e-12)
    check_grad("_contrib_interleaved_matmul_encdec_qk", [q, kv], {"heads": h})
    check_grad("_contrib_interleaved_matmul_encdec_valatt", [kv, att], {"heads": h})


def test_shapes_and_errors():
    s = mx.sym.contrib.interleaved_matmul_selfatt_qk(mx.sym.var("x"), heads=4)
    assert s.infer_shape(x=(7, 2, 4 * 3 * 8))[1] == [(8, 7, 7)]
    with pytest.raises(ShapeError):
        s.infer_shape(x=(7, 2, 50))
    v = mx.sym.contrib.interleaved_matmul_encdec_valatt(mx.sym.var("kv"), mx.sym.var("att"), heads=2)
    assert v.infer_shape(kv=(5, 3, 2 * 2 * 4), att=(6, 7, 5))[1] == [(7, 3, 8)]
