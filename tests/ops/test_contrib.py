"""Contrib ops: gradients by finite differences and error messages (values: test_parity.py)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import check_grad, run  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import ShapeError  # noqa: E402

rng = np.random.default_rng(21)


def test_gradients():
    x = rng.standard_normal((2, 3))
    check_grad("_contrib_div_sqrt_dim", [x])
    check_grad("_contrib_quadratic", [x], {"a": 1.5, "b": -2.0, "c": 3.0})
    check_grad("_contrib_index_copy", [rng.standard_normal((4, 2)), np.array([3.0, 0.0]), rng.standard_normal((2, 2))],
               wrt=[0, 2])


def test_shapes_and_errors():
    op = ops.get("_contrib_index_copy")
    with pytest.raises(ShapeError, match=r"_contrib_index_copy: new_tensor has shape \(3, 2\)"):
        op.shapes({}, [(4, 2), (2,), (3, 2)])
    ar = ops.get("_contrib_arange_like")
    with pytest.raises(ShapeError, match="_contrib_arange_like: axis 2 is out of range"):
        ar.shapes(ar.parse_attrs({"axis": 2}), [(2, 3)])
    out = run("_contrib_allclose", [np.ones(3), np.ones(3)])
    assert out.shape == () and out.dtype == np.uint8 and out == 1
