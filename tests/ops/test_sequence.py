"""Sequence ops against values printed by MXNet 1.9.1; gradients by finite differences."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import check_grad, run  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402

X = np.arange(24, dtype=np.float32).reshape(4, 3, 2)   # (T, N, C)
XB = np.arange(24, dtype=np.float32).reshape(3, 4, 2)  # (N, T, C)
L = np.array([2, 4, 1], np.float32)
USE = {"use_sequence_length": True}


def test_sequence_mask_matches_mxnet():
    out = run("SequenceMask", [X, L], dict(USE, value=-1))
    np.testing.assert_array_equal(out[:, :, 0], [[0, 2, 4], [6, 8, -1], [-1, 14, -1], [-1, 20, -1]])
    outb = run("SequenceMask", [XB, L], dict(USE, axis=1))
    np.testing.assert_array_equal(outb[:, :, 0], [[0, 2, 0, 0], [8, 10, 12, 14], [16, 0, 0, 0]])
    np.testing.assert_array_equal(run("SequenceMask", [X]), X)  # no lengths: nothing masked
    check_grad("SequenceMask", [X.astype(np.float64), L], USE, wrt=[0])


def test_sequence_last_matches_mxnet():
    np.testing.assert_array_equal(run("SequenceLast", [X, L], USE), [[6, 7], [20, 21], [4, 5]])
    np.testing.assert_array_equal(run("SequenceLast", [XB, L], dict(USE, axis=1)), [[2, 3], [14, 15], [16, 17]])
    np.testing.assert_array_equal(run("SequenceLast", [X]), X[-1])
    check_grad("SequenceLast", [X.astype(np.float64), L], USE, wrt=[0])
    check_grad("SequenceLast", [XB.astype(np.float64), L], dict(USE, axis=1), wrt=[0])
    with pytest.raises(IndexError, match=r"SequenceLast: sequence lengths must be in \[1, 4\]"):
        run("SequenceLast", [X, np.array([0, 1, 2], np.float32)], USE)


def test_sequence_reverse_matches_mxnet():
    out = run("SequenceReverse", [X, L], USE)
    np.testing.assert_array_equal(out[:, :, 0], [[6, 20, 4], [0, 14, 10], [12, 8, 16], [18, 2, 22]])
    np.testing.assert_array_equal(run("SequenceReverse", [X]), X[::-1])
    check_grad("SequenceReverse", [X.astype(np.float64), L], USE, wrt=[0])


def test_sequence_errors_and_arity():
    op = ops.get("SequenceMask")
    assert op.input_names(op.parse_attrs({})) == ["data"]
    assert op.input_names(op.parse_attrs(USE)) == ["data", "sequence_length"]
    with pytest.raises(ShapeError, match=r"SequenceMask: sequence_length has shape \(2,\) but data"):
        op.shapes(op.parse_attrs(USE), [(4, 3, 2), (2,)])
    with pytest.raises(OperatorError, match="SequenceMask: axis must be 0 or 1"):
        op.shapes(op.parse_attrs({"axis": 2}), [(4, 3, 2)])
