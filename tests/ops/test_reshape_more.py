"""Reshape with reverse and -4, the deprecated target_shape, reshape_like's axis spans (MXNet 1.x rules)."""
import numpy as np
import pytest

import ember as mx
from ember.base import ShapeError

from ._gradcheck import check_grad, run


@pytest.mark.parametrize("src,spec,dst", [((64,), (16, 4, -4), (16, 4)),
                                          ((1, 2, 3, 64), (-2, -1, 16, -4), (1, 2, 3, 4, 16)),
                                          ((6, 4), (-4, 2, -1, 0), (2, 3, 4))])
def test_reverse_reshape_with_split(src, spec, dst):
    reverse = spec != (-4, 2, -1, 0)
    x = np.arange(np.prod(src), dtype=np.float64).reshape(src)
    out = run("Reshape", [x], {"shape": spec, "reverse": reverse})
    assert out.shape == dst
    np.testing.assert_array_equal(out.ravel(), x.ravel())


def test_deprecated_target_shape_infers_its_zero():
    assert run("Reshape", [np.ones((2, 3, 5, 5))], {"target_shape": (2, 0)}).shape == (2, 75)
    assert run("Reshape", [np.ones((4, 3, 5))], {"target_shape": (7, 0, 3), "keep_highest": True}).shape == (4, 5, 3)
    with pytest.raises(ShapeError, match="target_shape"):
        run("Reshape", [np.ones((2, 3))], {"target_shape": (4, 2)})
    s = mx.sym.Reshape(mx.sym.var("d"), target_shape=(2, 0))
    assert mx.sym.load_json(s.tojson()).infer_shape(d=(2, 3, 5, 5))[1] == [(2, 75)]


@pytest.mark.parametrize("lhs,rhs,attrs,dst", [
    ((30, 7), (15, 2, 4), {"lhs_begin": 0, "lhs_end": 1, "rhs_begin": 0, "rhs_end": 2}, (15, 2, 7)),
    ((3, 5), (1, 15, 4), {"lhs_begin": 0, "lhs_end": 2, "rhs_begin": 1, "rhs_end": 2}, (15,)),
    ((30, 12), (4, 2, 2, 3), {"lhs_begin": -1, "lhs_end": None, "rhs_begin": 1, "rhs_end": None}, (30, 2, 2, 3)),
    ((3, 5), (5, 3), {}, (5, 3)),
])
def test_reshape_like_spans_and_gradient(lhs, rhs, attrs, dst):
    a = np.random.rand(*lhs)
    out = run("reshape_like", [a, np.zeros(rhs)], attrs)
    assert out.shape == dst
    np.testing.assert_array_equal(out.ravel(), a.ravel())
    check_grad("reshape_like", [a, np.zeros(rhs)], attrs, wrt=[0])


def test_reshape_like_span_errors():
    with pytest.raises(ShapeError, match="lhs_begin"):
        run("reshape_like", [np.ones((3, 4)), np.ones((12,))], {"lhs_begin": 3, "lhs_end": 1})
    with pytest.raises(ShapeError, match="cannot reshape"):
        run("reshape_like", [np.ones((3, 4)), np.ones((5,))], {"lhs_begin": 0, "lhs_end": 2})
