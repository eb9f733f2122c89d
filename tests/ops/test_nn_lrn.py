"""LRN against a numpy reference (MXNet 1.9.1's channel window) and finite differences."""
import numpy as np
import pytest

import ember as mx
from ember.base import MXNetError

from ._gradcheck import run
from .test_ops_breadth_spatial import _check_visible_grad  # tmp_norm is hidden: no gradient flows from it


def _lrn_reference(x, nsize, alpha, beta, knorm):
    half = (nsize - 1) // 2
    c = x.shape[1]
    sq = x.astype(np.float64) ** 2
    window = np.stack([sq[:, max(k - half, 0):min(k + half + 1, c)].sum(axis=1) for k in range(c)], axis=1)
    norm = knorm + alpha / nsize * window
    return x * norm ** -beta, norm


@pytest.mark.parametrize("nsize", [1, 3, 4, 5])
def test_lrn_values_and_hidden_norm(nsize):
    x = np.random.default_rng(nsize).uniform(-1, 1, (2, 6, 3, 2))
    attrs = {"nsize": nsize, "alpha": 0.3, "beta": 0.7, "knorm": 1.5}
    out, norm = run("LRN", [x], attrs, all_outputs=True)
    want, want_norm = _lrn_reference(x, **attrs)
    np.testing.assert_allclose(out, want, rtol=1e-10)
    np.testing.assert_allclose(norm, want_norm, rtol=1e-10)
    _check_visible_grad("LRN", x, attrs)


def test_lrn_symbol_outputs_and_errors():
    s = mx.sym.LRN(mx.sym.var("data"), nsize=3, name="lrn")
    assert s.list_outputs() == ["lrn_output"]
    assert s.infer_shape(data=(1, 4, 2, 2))[1] == [(1, 4, 2, 2)]
    with pytest.raises(MXNetError, match="4-D"):
        mx.nd.LRN(mx.nd.ones((2, 3)), nsize=3).wait_to_read()
    with pytest.raises(MXNetError, match="nsize"):
        mx.nd.LRN(mx.nd.ones((1, 2, 2, 2)), nsize=0).wait_to_read()
