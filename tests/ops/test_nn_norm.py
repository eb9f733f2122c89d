"""BatchNorm and LayerNorm: numpy references, aux updates in place, gradients, shapes, errors."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import check_grad, run_op  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402

rng = np.random.default_rng(3)


def _bn_inputs(shape=(4, 3, 2, 3), axis=1):
    c = shape[axis]
    return ([rng.standard_normal(shape), rng.uniform(0.5, 1.5, c), rng.standard_normal(c)],
            [rng.standard_normal(c) * 0.1, rng.uniform(0.5, 1.5, c)])


def test_training_normalises_with_batch_stats_and_updates_aux_in_place():
    (x, g, b), aux = _bn_inputs()
    mm, mv = aux[0].copy(), aux[1].copy()
    aux_arrays = [aux[0], aux[1]]
    out, mean, invstd = run_op("BatchNorm", [x, g, b], {"fix_gamma": False, "momentum": 0.8, "eps": 1e-5},
                               aux=aux_arrays, is_train=True)
    m, v = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    ref = (x - m[:, None, None]) / np.sqrt(v[:, None, None] + 1e-5) * g[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(out, ref, rtol=1e-10)
    np.testing.assert_allclose(mean, m, rtol=1e-12)
    np.testing.assert_allclose(invstd, 1 / np.sqrt(v + 1e-5), rtol=1e-12)
    assert aux_arrays[0] is aux[0]  # same buffers, updated in place
    np.testing.assert_allclose(aux[0], 0.8 * mm + 0.2 * m, rtol=1e-12)
    np.testing.assert_allclose(aux[1], 0.8 * mv + 0.2 * v, rtol=1e-12)


@pytest.mark.parametrize("is_train,use_global", [(False, False), (True, True)])
def test_moving_stats_used_in_inference_or_global_mode(is_train, use_global):
    (x, g, b), aux = _bn_inputs()
    before = [a.copy() for a in aux]
    out = run_op("BatchNorm", [x, g, b], {"use_global_stats": use_global}, aux=aux, is_train=is_train)[0]
    ref = (x - before[0][:, None, None]) / np.sqrt(before[1][:, None, None] + 1e-3) + b[:, None, None]  # fix_gamma
    np.testing.assert_allclose(out, ref, rtol=1e-10)
    for a, c in zip(aux, before):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("attrs,is_train", [({"fix_gamma": False}, True), ({}, True),
                                            ({"fix_gamma": False, "use_global_stats": True}, True),
                                            ({"fix_gamma": False, "use_global_stats": True}, False),
                                            ({"fix_gamma": False, "axis": -1}, True)])
def test_batchnorm_gradients(attrs, is_train):
    ins, aux = _bn_inputs((3, 2, 4) if attrs.get("axis") != -1 else (3, 5, 2), axis=attrs.get("axis", 1))
    grads = check_grad("BatchNorm", ins, attrs, aux=aux, is_train=is_train)
    if attrs.get("fix_gamma", True):
        assert not np.any(grads[1])


def test_batchnorm_output_mean_var_visible_outputs():
    op = ops.get("BatchNorm")
    assert op.visible_outputs(op.parse_attrs({})) == 1
    assert op.visible_outputs(op.parse_attrs({"output_mean_var": True})) == 3
    assert op.aux_names(op.parse_attrs({})) == ["moving_mean", "moving_var"]


def test_batchnorm_shape_inference_and_errors():
    op = ops.get("BatchNorm")
    a = op.parse_attrs({})
    ins, outs, aux = op.shapes(a, [(8, 16, 5, 5), None, None], [None, None])
    assert ins[1:] == [(16,), (16,)] and aux == [(16,), (16,)] and outs[0] == (8, 16, 5, 5)
    with pytest.raises(ShapeError, match="BatchNorm: gamma"):
        op.shapes(a, [(8, 16, 5, 5), (15,), None], [None, None])
    with pytest.raises(ShapeError, match="BatchNorm: axis"):
        op.shapes(op.parse_attrs({"axis": 4}), [(8, 16, 5, 5), None, None], [None, None])
    with pytest.raises(OperatorError, match="BatchNorm: floating point"):
        op.dtypes(a, [np.dtype("int32"), None, None])


def test_batchnorm_float16_keeps_float32_params():
    op = ops.get("BatchNorm")
    ins, outs, aux = op.dtypes(op.parse_attrs({}), [np.dtype("float16"), None, None])
    assert ins == [np.float16, np.float32, np.float32] and outs[0] == np.float16 and aux == [np.float32] * 2


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_layernorm_forward_and_gradients(axis):
    x = rng.standard_normal((3, 4, 2))
    c = x.shape[axis]
    g, b = rng.uniform(0.5, 1.5, c), rng.standard_normal(c)
    out, mean, std = run_op("LayerNorm", [x, g, b], {"axis": axis, "eps": 1e-4})
    m, s = x.mean(axis=axis, keepdims=True), np.sqrt(x.var(axis=axis, keepdims=True) + 1e-4)
    shape = [1] * 3
    shape[axis] = -1
    np.testing.assert_allclose(out, (x - m) / s * g.reshape(shape) + b.reshape(shape), rtol=1e-10)
    np.testing.assert_allclose(std, s, rtol=1e-12)
    check_grad("LayerNorm", [x, g, b], {"axis": axis})


def test_layernorm_shape_errors():
    op = ops.get("LayerNorm")
    with pytest.raises(ShapeError, match="LayerNorm: gamma"):
        op.shapes(op.parse_attrs({}), [(2, 3), (2,), None])
    ins, outs, _ = op.shapes(op.parse_attrs({"axis": 0}), [(2, 3), None, None])
    assert ins[1] == (2,) and outs[1] == (1, 3)
