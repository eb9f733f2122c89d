"""Pooling against a direct reference, gradients, output-size conventions and errors."""
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import check_grad, run_op  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402

rng = np.random.default_rng(2)


def pool_reference(x, kernel, stride, pad, kind, full=False, include_pad=True):
    """Direct 2-D pooling, one window at a time (MXNet's boundary rules)."""
    n, c, h, w = x.shape
    outs = []
    for size, k, s, p in zip((h, w), kernel, stride, pad):
        span = size + 2 * p - k
        outs.append((math.ceil(span / s) if full else span // s) + 1)
    res = np.zeros((n, c) + tuple(outs))
    for y in range(outs[0]):
        for z in range(outs[1]):
            y0, z0 = y * stride[0] - pad[0], z * stride[1] - pad[1]
            y1, z1 = min(y0 + kernel[0], h + pad[0]), min(z0 + kernel[1], w + pad[1])
            count = (y1 - y0) * (z1 - z0)
            ya, za, yb, zb = max(y0, 0), max(z0, 0), min(y1, h), min(z1, w)
            win = x[:, :, ya:yb, za:zb]
            if kind == "max":
                res[:, :, y, z] = win.max(axis=(2, 3))
            elif kind == "sum":
                res[:, :, y, z] = win.sum(axis=(2, 3))
            else:
                res[:, :, y, z] = win.sum(axis=(2, 3)) / (count if include_pad else (yb - ya) * (zb - za))
    return res


CASES = [((3, 3), (2, 2), (1, 1), False), ((2, 3), (2, 1), (0, 1), False), ((3, 2), (2, 2), (1, 0), True),
         ((2, 2), (3, 3), (0, 0), True)]


@pytest.mark.parametrize("kind", ["max", "avg", "sum"])
@pytest.mark.parametrize("kernel,stride,pad,full", CASES)
def test_forward_matches_reference(kind, kernel, stride, pad, full):
    x = rng.standard_normal((2, 3, 7, 8))
    attrs = dict(kernel=kernel, stride=stride, pad=pad, pool_type=kind,
                 pooling_convention="full" if full else "valid")
    out = run_op("Pooling", [x], attrs)[0]
    np.testing.assert_allclose(out, pool_reference(x, kernel, stride, pad, kind, full), rtol=1e-12)


def test_avg_excluding_padding():
    x = rng.standard_normal((1, 2, 5, 5))
    attrs = dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg", count_include_pad="False")
    np.testing.assert_allclose(run_op("Pooling", [x], attrs)[0],
                               pool_reference(x, (3, 3), (2, 2), (1, 1), "avg", include_pad=False), rtol=1e-12)


@pytest.mark.parametrize("kind", ["max", "avg", "sum"])
def test_global_pool_and_1d(kind):
    x = rng.standard_normal((2, 3, 4, 5))
    red = {"max": np.max, "avg": np.mean, "sum": np.sum}[kind]
    out = run_op("Pooling", [x], dict(global_pool=True, pool_type=kind, kernel=(1, 1)))[0]
    np.testing.assert_allclose(out, red(x, axis=(2, 3), keepdims=True), rtol=1e-12)
    x1 = rng.standard_normal((2, 3, 9))
    out1 = run_op("Pooling", [x1], dict(kernel=(3,), stride=(2,), pool_type=kind))[0]
    np.testing.assert_allclose(out1, pool_reference(x1[:, :, None], (1, 3), (1, 2), (0, 0), kind)[:, :, 0], rtol=1e-12)


@pytest.mark.parametrize("kind", ["max", "avg", "sum"])
@pytest.mark.parametrize("kernel,stride,pad,full", CASES[:3])
def test_gradients(kind, kernel, stride, pad, full):
    x = rng.standard_normal((1, 2, 6, 5))
    check_grad("Pooling", [x], dict(kernel=kernel, stride=stride, pad=pad, pool_type=kind,
                                    pooling_convention="full" if full else "valid", count_include_pad=False))


def test_lp_pooling_value_and_gradient():
    x = rng.uniform(0.1, 1.0, (1, 2, 4, 4))
    out = run_op("Pooling", [x], dict(kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=2))[0]
    np.testing.assert_allclose(out, np.sqrt((x ** 2).reshape(1, 2, 2, 2, 2, 2).sum(axis=(3, 5))), rtol=1e-12)
    check_grad("Pooling", [x], dict(kernel=(2, 2), stride=(1, 1), pool_type="lp", p_value=2))


def test_max_gradient_goes_to_first_maximum():
    x = np.ones((1, 1, 2, 2))
    g = check_grad("Pooling", [x], dict(kernel=(2, 2), pool_type="max"), out_grads=[np.ones((1, 1, 1, 1))],
                   wrt=[])[0]
    np.testing.assert_array_equal(g[0, 0], [[1, 0], [0, 0]])


@pytest.mark.parametrize("attrs,shape,err,msg", [
    (dict(kernel=(3, 3)), (2, 3, 5), OperatorError, "kernel"),
    (dict(kernel=(9, 9)), (2, 3, 5, 5), ShapeError, "larger than the padded input"),
    (dict(kernel=(2, 2), stride=(0, 1)), (2, 3, 5, 5), OperatorError, "stride"),
    (dict(kernel=(2, 2), pooling_convention="same"), (2, 3, 5, 5), OperatorError, "same"),
    (dict(kernel=(2, 2, 2, 2)), (2, 3, 5, 5, 5, 5), ShapeError, "3-D .* or 5-D"),
    (dict(kernel=(2, 2), pool_type="lp"), (2, 3, 5, 5), OperatorError, "p_value"),
])
def test_errors(attrs, shape, err, msg):
    op = ops.get("Pooling")
    with pytest.raises(err, match=f"Pooling.*{msg}"):
        op.shapes(op.parse_attrs(attrs), [shape])


def test_unknown_pool_type_rejected():
    with pytest.raises(OperatorError, match="pool_type"):
        ops.get("Pooling").parse_attrs({"kernel": (2, 2), "pool_type": "median"})


def test_1d_pooling_writes_into_non_contiguous_output():
    x = rng.standard_normal((2, 3, 9))
    attrs = dict(kernel=(3,), stride=(2,), pool_type="avg")
    expected = run_op("Pooling", [x], attrs)[0]
    op = ops.get("Pooling")
    big = np.zeros((2, 3, 4, 2))
    op.kernel("cpu")(ops.OpContext(np), op.parse_attrs(attrs), [x], [big[..., 1]], [])
    np.testing.assert_allclose(big[..., 1], expected, rtol=1e-12)
