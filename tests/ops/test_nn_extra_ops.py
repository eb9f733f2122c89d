"""Operators added for Gluon layers: 3-D Convolution/Deconvolution/Pooling, InstanceNorm, GroupNorm,
_contrib_SyncBatchNorm and _contrib_BatchNormWithReLU — direct references, finite differences,
errors, and MXNet 1.9.1 fixtures (tests/data/make_nn_extra_fixtures.py)."""
from __future__ import annotations

import glob
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import analytic_grads, check_grad, run_op  # noqa: E402
from test_nn_mxnet_fixtures import _load  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402

rng = np.random.default_rng(7)
FIXTURES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "data", "ops_extra", "*.npz")))
# Where MXNet 1.9.1's recorded numbers are not what its operator defines (ember's are checked above)
MXNET_GRAD_BUGS = {
    "pool3d_max_valid": "oneDNN's 3-D max-pool backward: its gradient sums to 3.62 for head gradients summing "
                        "to 2.42 (a max pool routes each head entry to exactly one input)",
    "syncbn_eval": "MXNet's SyncBatchNorm returns NaN input gradients after an inference-mode forward",
}
MXNET_AUX_QUIRKS = {
    "syncbn_eval": "MXNet's SyncBatchNorm updates the moving statistics in its backward pass, even after an "
                   "inference-mode forward; ember (as BatchNorm) updates them only in training forwards",
}


# -- references -------------------------------------------------------------------------------
def conv_nd_reference(x, w, stride, pad, dilate, groups):
    """Direct N-D convolution, one output position at a time."""
    n, c = x.shape[:2]
    f, cg = w.shape[:2]
    k = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    osz = [(s + 2 * p - d * (kk - 1) - 1) // st + 1 for s, p, d, kk, st in zip(x.shape[2:], pad, dilate, k, stride)]
    out = np.zeros((n, f) + tuple(osz))
    fg = f // groups
    for pos in np.ndindex(*osz):
        win = tuple(slice(i * st, i * st + d * (kk - 1) + 1, d) for i, st, d, kk in zip(pos, stride, dilate, k))
        for g in range(groups):
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + win]
            out[(slice(None), slice(g * fg, (g + 1) * fg)) + pos] = np.tensordot(
                patch, w[g * fg:(g + 1) * fg], axes=(list(range(1, patch.ndim)), list(range(1, patch.ndim))))
    return out


def deconv_nd_reference(x, w, stride, pad, adj, groups):
    """Transposed N-D convolution: scatter every input position times the kernel, then crop."""
    n, c = x.shape[:2]
    fg, k = w.shape[1], w.shape[2:]
    full = np.zeros((n, fg * groups) + tuple((s - 1) * st + kk + a for s, st, kk, a in zip(x.shape[2:], stride, k, adj)))
    cg = c // groups
    for ci in range(c):
        g = ci // cg
        for pos in np.ndindex(*x.shape[2:]):
            win = tuple(slice(i * st, i * st + kk) for i, st, kk in zip(pos, stride, k))
            full[(slice(None), slice(g * fg, (g + 1) * fg)) + win] += \
                x[(slice(None), ci) + pos].reshape((n, 1) + (1,) * len(k)) * w[ci][None]
    osz = [(s - 1) * st + kk - 2 * p + a for s, st, kk, p, a in zip(x.shape[2:], stride, k, pad, adj)]
    return full[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(pad, osz))]


def pool3d_reference(x, kernel, stride, pad, kind, include_pad=True):
    """Direct 3-D pooling ('valid' convention), one window at a time."""
    osz = [(s + 2 * p - k) // st + 1 for s, k, st, p in zip(x.shape[2:], kernel, stride, pad)]
    out = np.zeros(x.shape[:2] + tuple(osz))
    for pos in np.ndindex(*osz):
        lo = [i * st - p for i, st, p in zip(pos, stride, pad)]
        hi = [min(a + k, s + p) for a, k, s, p in zip(lo, kernel, x.shape[2:], pad)]
        win = x[(slice(None), slice(None)) + tuple(slice(max(a, 0), min(b, s)) for a, b, s in zip(lo, hi, x.shape[2:]))]
        red = (2, 3, 4)
        if kind == "max":
            out[(slice(None), slice(None)) + pos] = win.max(axis=red)
        elif kind == "sum":
            out[(slice(None), slice(None)) + pos] = win.sum(axis=red)
        else:
            count = np.prod([b - a for a, b in zip(lo, hi)]) if include_pad else np.prod(win.shape[2:])
            out[(slice(None), slice(None)) + pos] = win.sum(axis=red) / count
    return out


def group_norm_reference(x, gamma, beta, groups, eps):
    n = x.shape[0]
    xg = x.reshape(n, groups, -1)
    xhat = (xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + eps)
    return (xhat * gamma[None, :, None] + beta[None, :, None]).reshape(x.shape)


# -- 3-D convolution ------------------------------------------------------------------------
@pytest.mark.parametrize("stride,pad,dilate,groups", [
    ((1, 1, 1), (0, 0, 0), (1, 1, 1), 1), ((2, 1, 2), (1, 0, 1), (1, 2, 1), 2), ((1, 2, 1), (2, 1, 0), (2, 1, 1), 4),
])
def test_conv3d_forward_matches_reference(stride, pad, dilate, groups):
    x, w, b = rng.standard_normal((2, 4, 6, 7, 5)), rng.standard_normal((4, 4 // groups, 3, 2, 2)), rng.standard_normal(4)
    attrs = dict(kernel=(3, 2, 2), num_filter=4, stride=stride, pad=pad, dilate=dilate, num_group=groups)
    out = run_op("Convolution", [x, w, b], attrs)[0]
    ref = conv_nd_reference(x, w, stride, pad, dilate, groups) + b[None, :, None, None, None]
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("attrs,xs,ws", [
    (dict(kernel=(2, 3, 2), num_filter=3, pad=(1, 1, 0)), (1, 2, 4, 4, 3), (3, 2, 2, 3, 2)),
    (dict(kernel=(3, 2, 2), num_filter=4, stride=(2, 1, 2), dilate=(1, 2, 1), num_group=2), (2, 4, 5, 5, 4), (4, 2, 3, 2, 2)),
    (dict(kernel=(2, 2, 2), num_filter=3, num_group=3, pad=(1, 1, 1)), (1, 3, 3, 3, 3), (3, 1, 2, 2, 2)),
])
def test_conv3d_gradients(attrs, xs, ws):
    check_grad("Convolution", [rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(attrs["num_filter"])],
               attrs)


@pytest.mark.parametrize("stride,pad,adj,groups", [
    ((1, 1, 1), (0, 0, 0), (0, 0, 0), 1), ((2, 2, 1), (1, 1, 0), (1, 0, 0), 1), ((2, 1, 2), (0, 1, 1), (1, 0, 1), 2),
])
def test_deconv3d_forward_matches_reference(stride, pad, adj, groups):
    x, w = rng.standard_normal((2, 4, 3, 4, 3)), rng.standard_normal((4, 3, 3, 2, 3))
    attrs = dict(kernel=(3, 2, 3), num_filter=3 * groups, stride=stride, pad=pad, adj=adj, num_group=groups)
    out = run_op("Deconvolution", [x, w], attrs)[0]
    np.testing.assert_allclose(out, deconv_nd_reference(x, w, stride, pad, adj, groups), rtol=1e-10, atol=1e-10)


def test_deconv3d_target_shape_and_gradients():
    attrs = dict(kernel=(3, 3, 2), num_filter=4, stride=(2, 2, 2), target_shape=(4, 6, 5), num_group=2, no_bias=False)
    x, w, b = rng.standard_normal((1, 2, 2, 3, 3)), rng.standard_normal((2, 2, 3, 3, 2)), rng.standard_normal(4)
    assert run_op("Deconvolution", [x, w, b], attrs)[0].shape == (1, 4, 4, 6, 5)
    check_grad("Deconvolution", [x, w, b], attrs)


def test_conv3d_infers_weight_shape_with_unknown_dims():
    op = ops.get("Convolution")
    ins, outs, _ = op.shapes(op.parse_attrs(dict(kernel=(3, 3, 3), num_filter=8, pad=(1, 1, 1))),
                             [(2, 5, 4, 6, 6), (8, 0, 3, 3, 3), None])
    assert ins[1:] == [(8, 5, 3, 3, 3), (8,)] and outs == [(2, 8, 4, 6, 6)]
    op = ops.get("Deconvolution")
    ins, outs, _ = op.shapes(op.parse_attrs(dict(kernel=(2, 2, 2), num_filter=6, stride=(2, 2, 2), num_group=3)),
                             [(1, 3, 2, 3, 4), None])
    assert ins[1] == (3, 2, 2, 2, 2) and outs == [(1, 6, 4, 6, 8)]


@pytest.mark.parametrize("op,attrs,shape,err,msg", [
    ("Convolution", dict(kernel=(3, 3, 3), num_filter=2), (2, 3, 5, 5), ShapeError, "5-D .N, C, D, H, W."),
    ("Convolution", dict(kernel=(3, 3, 3, 3), num_filter=2), (2, 3, 5, 5, 5, 5), OperatorError, "1-D, 2-D and 3-D"),
    ("Convolution", dict(kernel=(3, 3, 3), num_filter=2, layout="NHWC"), (2, 3, 5, 5, 5), OperatorError, "layout"),
    ("Deconvolution", dict(kernel=(2, 2, 2), num_filter=2, adj=(2, 0, 0), stride=(2, 2, 2)), (1, 2, 3, 3, 3),
     OperatorError, "adj"),
])
def test_3d_errors(op, attrs, shape, err, msg):
    opdef = ops.get(op)
    with pytest.raises(err, match=f"{op}.*{msg}"):
        opdef.shapes(opdef.parse_attrs(attrs), [shape, None])


# -- 3-D pooling ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["max", "avg", "sum"])
@pytest.mark.parametrize("kernel,stride,pad", [((2, 2, 2), (2, 2, 2), (0, 0, 0)), ((3, 2, 3), (2, 1, 2), (1, 0, 1))])
def test_pool3d_forward_matches_reference(kind, kernel, stride, pad):
    x = rng.standard_normal((2, 3, 5, 6, 7))
    out = run_op("Pooling", [x], dict(kernel=kernel, stride=stride, pad=pad, pool_type=kind))[0]
    np.testing.assert_allclose(out, pool3d_reference(x, kernel, stride, pad, kind), rtol=1e-12)


def test_pool3d_avg_excluding_padding():
    x = rng.standard_normal((1, 2, 5, 4, 5))
    attrs = dict(kernel=(3, 3, 3), stride=(2, 2, 2), pad=(1, 1, 1), pool_type="avg", count_include_pad=False)
    np.testing.assert_allclose(run_op("Pooling", [x], attrs)[0],
                               pool3d_reference(x, (3, 3, 3), (2, 2, 2), (1, 1, 1), "avg", include_pad=False), rtol=1e-12)


@pytest.mark.parametrize("attrs", [
    dict(kernel=(2, 2, 2), stride=(2, 1, 2), pool_type="max"),
    dict(kernel=(3, 2, 2), stride=(2, 2, 1), pad=(1, 1, 0), pool_type="avg", pooling_convention="full"),
    dict(kernel=(2, 3, 2), pad=(1, 1, 1), pool_type="avg", count_include_pad=False),
    dict(kernel=(2, 2, 2), pool_type="sum"),
    dict(kernel=(1, 1, 1), global_pool=True, pool_type="max"),
    dict(kernel=(2, 2, 2), pool_type="lp", p_value=2),
])
def test_pool3d_gradients(attrs):
    x = rng.uniform(0.2, 1.5, size=(1, 2, 4, 5, 4)) if attrs["pool_type"] == "lp" else rng.standard_normal((1, 2, 4, 5, 4))
    check_grad("Pooling", [x], attrs)


def test_global_pool3d_shape():
    op = ops.get("Pooling")
    _, outs, _ = op.shapes(op.parse_attrs(dict(global_pool=True, pool_type="avg")), [(2, 3, 4, 5, 6)])
    assert outs == [(2, 3, 1, 1, 1)]


# -- InstanceNorm / GroupNorm ------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5), (1, 2, 3, 2, 2)])
def test_instance_norm_matches_numpy_and_gradients(shape):
    x = rng.standard_normal(shape)
    gamma, beta = rng.uniform(0.5, 1.5, shape[1]), rng.standard_normal(shape[1])
    outs = run_op("InstanceNorm", [x, gamma, beta], dict(eps=1e-3))
    ref = group_norm_reference(x, gamma, beta, shape[1], 1e-3)
    np.testing.assert_allclose(outs[0], ref, rtol=1e-10, atol=1e-12)
    red = tuple(range(2, x.ndim))
    np.testing.assert_allclose(outs[1], x.mean(axis=red), rtol=1e-10)
    np.testing.assert_allclose(outs[2], x.var(axis=red), rtol=1e-10)
    check_grad("InstanceNorm", [x, gamma, beta], dict(eps=1e-3))


@pytest.mark.parametrize("groups,shape", [(1, (2, 3, 5)), (2, (2, 4, 3, 2)), (3, (1, 6, 2, 2, 2))])
def test_group_norm_matches_numpy_and_gradients(groups, shape):
    x = rng.standard_normal(shape)
    gamma, beta = rng.uniform(0.5, 1.5, groups), rng.standard_normal(groups)
    attrs = dict(num_groups=groups, eps=1e-5, output_mean_var=True)
    out, mean, std = run_op("GroupNorm", [x, gamma, beta], attrs)
    np.testing.assert_allclose(out, group_norm_reference(x, gamma, beta, groups, 1e-5), rtol=1e-10, atol=1e-12)
    xg = x.reshape(shape[0], groups, -1)
    np.testing.assert_allclose(mean, xg.mean(-1), rtol=1e-10)
    np.testing.assert_allclose(std, np.sqrt(xg.var(-1) + 1e-5), rtol=1e-10)
    check_grad("GroupNorm", [x, gamma, beta], dict(num_groups=groups))
    assert ops.get("GroupNorm").visible_outputs(ops.get("GroupNorm").parse_attrs(attrs)) == 3


@pytest.mark.parametrize("op,attrs,shapes,msg", [
    ("InstanceNorm", {}, [(2, 3), None, None], "rank >= 3"),
    ("InstanceNorm", {}, [(2, 3, 4), (2,), None], "gamma"),
    ("GroupNorm", dict(num_groups=2), [(2, 3, 4), None, None], "divisible by num_groups"),
    ("GroupNorm", dict(num_groups=2), [(2, 4), None, None], "at least 3 dimensions"),
    ("GroupNorm", dict(num_groups=2), [(2, 4, 3), (4,), None], "gamma"),
])
def test_norm_shape_errors(op, attrs, shapes, msg):
    opdef = ops.get(op)
    with pytest.raises(ShapeError, match=f"{op}.*{msg}"):
        opdef.shapes(opdef.parse_attrs(attrs), shapes)


def test_norm_shape_inference_fills_parameters():
    op = ops.get("GroupNorm")
    ins, outs, _ = op.shapes(op.parse_attrs(dict(num_groups=2)), [(3, 4, 5), None, (0,)])
    assert ins == [(3, 4, 5), (2,), (2,)] and outs == [(3, 4, 5), (3, 2), (3, 2)]
    op = ops.get("InstanceNorm")
    ins, outs, _ = op.shapes(op.parse_attrs({}), [(3, 4, 5, 6), None, None])
    assert ins[1:] == [(4,), (4,)] and outs[1:] == [(3, 4), (3, 4)]


def test_norm_rejects_integer_data():
    with pytest.raises(OperatorError, match="GroupNorm: floating point"):
        ops.get("GroupNorm").dtypes({}, [np.dtype(np.int32), None, None])


# -- BatchNorm variants ------------------------------------------------------------------------------
def _bn_inputs(shape=(4, 3, 2, 2)):
    c = shape[1]
    return ([rng.standard_normal(shape), rng.uniform(0.5, 1.5, c), rng.standard_normal(c)],
            [rng.standard_normal(c) * 0.1, rng.uniform(0.5, 1.5, c)])


@pytest.mark.parametrize("is_train", [True, False])
def test_sync_batchnorm_is_batchnorm_on_one_device(is_train):
    ins, aux = _bn_inputs()
    common = dict(fix_gamma=False, momentum=0.8, eps=1e-4)
    aux_a, aux_b = [a.copy() for a in aux], [a.copy() for a in aux]
    mine = run_op("_contrib_SyncBatchNorm", ins, dict(common, key="bn0"), aux=aux_a, is_train=is_train)
    ref = run_op("BatchNorm", ins, common, aux=aux_b, is_train=is_train)
    # the hidden var output is the variance (MXNet's SyncBatchNorm), BatchNorm's the inverse std
    assert len(mine) == 3
    ref[2] = 1.0 / ref[2] ** 2 - common["eps"]
    for a, b in zip(mine + aux_a, ref + aux_b):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    heads = [rng.standard_normal(ins[0].shape)]
    mine = analytic_grads("_contrib_SyncBatchNorm", ins, dict(common, key="bn0"), heads, is_train=is_train, aux=aux)
    ref = analytic_grads("BatchNorm", ins, common, heads, is_train=is_train, aux=aux)
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    if is_train:  # (an inference-mode BatchNorm backward uses the batch formula, as MXNet's does)
        check_grad("_contrib_SyncBatchNorm", ins, dict(common, key="bn0"), aux=aux, is_train=True, wrt=[0, 1, 2])


def test_sync_batchnorm_refuses_several_devices():
    ins, aux = _bn_inputs()
    with pytest.raises(OperatorError, match="ndev"):
        run_op("_contrib_SyncBatchNorm", ins, dict(key="bn0", ndev=2), aux=aux, is_train=True)


def test_batchnorm_with_relu():
    ins, aux = _bn_inputs()
    attrs = dict(fix_gamma=False)
    out = run_op("_contrib_BatchNormWithReLU", ins, attrs, aux=[a.copy() for a in aux], is_train=True)[0]
    ref = run_op("BatchNorm", ins, attrs, aux=[a.copy() for a in aux], is_train=True)[0]
    np.testing.assert_allclose(out, np.maximum(ref, 0), rtol=1e-12)
    check_grad("_contrib_BatchNormWithReLU", ins, attrs, aux=aux, is_train=True, wrt=[0, 1, 2])


# -- MXNet 1.9.1 fixtures -----------------------------------------------------------------------------
def test_fixtures_present():
    assert len(FIXTURES) >= 15, "run tests/data/make_nn_extra_fixtures.py with the MXNet venv"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: os.path.basename(p)[:-4])
def test_matches_mxnet(path):
    fx = _load(path)
    name = fx["op"].replace("contrib.", "_contrib_")
    tol = dict(rtol=2e-4, atol=2e-5)
    aux = [a.copy() for a in fx["aux"]]
    outs = run_op(name, fx["inputs"], fx["attrs"], aux=aux or None, is_train=fx["is_train"])
    op = ops.get(name)
    assert op.visible_outputs(op.parse_attrs(fx["attrs"])) == len(fx["outputs"])
    for k, (mine, ref) in enumerate(zip(outs, fx["outputs"])):
        assert mine.dtype == ref.dtype
        np.testing.assert_allclose(mine, ref, err_msg=f"{name}: output {k}", **tol)
    case = os.path.basename(path)[:-4]
    for k, (mine, ref) in enumerate(zip(aux, fx["aux_after"])):
        if case not in MXNET_AUX_QUIRKS:
            np.testing.assert_allclose(mine, ref, err_msg=f"{name}: aux {k} after one step", **tol)
    if case in MXNET_GRAD_BUGS:
        return
    grads = analytic_grads(name, fx["inputs"], fx["attrs"], fx["heads"], is_train=fx["is_train"],
                           aux=[a.copy() for a in fx["aux"]] or None)
    for k, ref in fx["grads"].items():
        np.testing.assert_allclose(grads[k], ref, err_msg=f"{name}: gradient of input {k}", **tol)


# -- channel-last pooling layouts --------------------------------------------------------------------
@pytest.mark.parametrize("layout,shape,attrs", [
    ("NWC", (2, 9, 3), dict(kernel=(3,), stride=(2,), pool_type="max", pooling_convention="full")),
    ("NHWC", (2, 7, 6, 3), dict(kernel=(3, 2), stride=(2, 1), pad=(1, 0), pool_type="avg", count_include_pad=False)),
    ("NDHWC", (1, 4, 5, 4, 2), dict(kernel=(2, 2, 2), pool_type="sum")),
    ("NHWC", (2, 5, 4, 3), dict(global_pool=True, pool_type="max")),
])
def test_channel_last_pooling_is_channel_first_transposed(layout, shape, attrs):
    x = rng.standard_normal(shape)
    to_first = (0, x.ndim - 1) + tuple(range(1, x.ndim - 1))
    to_last = (0,) + tuple(range(2, x.ndim)) + (1,)
    ref = run_op("Pooling", [x.transpose(to_first)], attrs)[0]
    out = run_op("Pooling", [x], dict(attrs, layout=layout))[0]
    np.testing.assert_array_equal(out, ref.transpose(to_last))
    check_grad("Pooling", [x[:1]], dict(attrs, layout=layout))


def test_pooling_layout_must_fit_the_data():
    op = ops.get("Pooling")
    with pytest.raises(OperatorError, match="Pooling: layout NHWC does not fit 5-D data"):
        op.shapes(op.parse_attrs(dict(kernel=(2, 2, 2), layout="NHWC")), [(1, 2, 3, 4, 5)])


@pytest.mark.parametrize("name", ["InstanceNorm", "GroupNorm", "_contrib_SyncBatchNorm", "_contrib_BatchNormWithReLU"])
def test_norm_ops_learn_the_data_shape_from_the_output(name):
    op = ops.get(name)
    attrs = op.parse_attrs({"key": "k"} if name == "_contrib_SyncBatchNorm" else {})
    ins = op.infer_shape_backward(attrs, [None, None, None], [(2, 4, 3), None, None])
    assert ins[0] == (2, 4, 3)


# -- channel-last convolution layouts ----------------------------------------------------------------
# MXNet 1.9.1 infers these shapes (weight (F, *kernel, C/g) / deconv (C, *kernel, F/g)), but its CPU kernels
# refuse to run channel-last convolutions ("Only support NCW, NCHW and NCDHW layout"); ember runs them on
# channel-first views.
@pytest.mark.parametrize("op,layout,data,expected", [
    ("Convolution", "NHWC", (1, 5, 6, 4), [(6, 3, 2, 2), (1, 3, 5, 6)]),
    ("Deconvolution", "NHWC", (1, 5, 6, 4), [(4, 3, 2, 3), (1, 7, 7, 6)]),
])
def test_channel_last_conv_shapes_as_mxnet(op, layout, data, expected):
    opdef = ops.get(op)
    ins, outs, _ = opdef.shapes(opdef.parse_attrs(dict(kernel=(3, 2), num_filter=6, num_group=2, layout=layout,
                                                       no_bias=False)), [data, None, None])
    assert [ins[1], outs[0]] == expected and ins[2] == (6,)


@pytest.mark.parametrize("op,nd,wshape,extra", [
    ("Convolution", 2, (6, 2, 3, 2), dict(stride=(2, 1), pad=(1, 0))),
    ("Convolution", 3, (6, 2, 2, 3, 2), dict(pad=(1, 0, 1), dilate=(1, 2, 1))),
    ("Deconvolution", 2, (4, 3, 3, 2), dict(stride=(2, 2), adj=(1, 0))),
    ("Deconvolution", 3, (4, 3, 2, 2, 2), dict(stride=(2, 1, 2), pad=(1, 0, 0))),
])
def test_channel_last_conv_is_channel_first_transposed(op, nd, wshape, extra):
    attrs = dict(kernel=wshape[2:], num_filter=6, num_group=2, no_bias=False, **extra)
    x = rng.standard_normal((2, 4) + (5, 6, 4)[:nd])
    w, b = rng.standard_normal(wshape), rng.standard_normal(6)
    last = (0,) + tuple(range(2, nd + 2)) + (1,)
    layout = {2: "NHWC", 3: "NDHWC"}[nd]
    ref = run_op(op, [x, w, b], attrs)[0]
    out = run_op(op, [x.transpose(last), w.transpose(last), b], dict(attrs, layout=layout))[0]
    np.testing.assert_allclose(out, ref.transpose(last), rtol=1e-12, atol=1e-12)
    check_grad(op, [x[:1].transpose(last), w.transpose(last), b], dict(attrs, layout=layout))


def test_conv_layout_must_fit_the_kernel():
    op = ops.get("Convolution")
    with pytest.raises(OperatorError, match="Convolution: layout NHWC is not supported for a 1-D kernel"):
        op.shapes(op.parse_attrs(dict(kernel=(3,), num_filter=2, layout="NHWC")), [(1, 5, 3), None, None])


# -- pointwise (1x1) convolutions take a matrix-product path ----------------------------------------
@pytest.mark.parametrize("xshape,kernel,groups", [
    ((2, 4, 5, 6), (1, 1), 1), ((2, 6, 3, 4), (1, 1), 3), ((2, 4, 7), (1,), 2), ((1, 4, 3, 2, 3), (1, 1, 1), 2),
])
def test_pointwise_conv_matches_reference_and_gradients(xshape, kernel, groups):
    c, f = xshape[1], 6
    x, w, b = rng.standard_normal(xshape), rng.standard_normal((f, c // groups) + kernel), rng.standard_normal(f)
    attrs = dict(kernel=kernel, num_filter=f, num_group=groups)
    out = run_op("Convolution", [x, w, b], attrs)[0]
    ref = conv_nd_reference(x, w, (1,) * len(kernel), (0,) * len(kernel), (1,) * len(kernel), groups)
    np.testing.assert_allclose(out, ref + b.reshape((1, -1) + (1,) * len(kernel)), rtol=1e-10, atol=1e-10)
    check_grad("Convolution", [x[:1], w, b], attrs)
    dattrs = dict(kernel=kernel, num_filter=c, num_group=groups, no_bias=True)
    dw = rng.standard_normal((f, c // groups) + kernel)
    y = rng.standard_normal((2, f) + xshape[2:])
    np.testing.assert_allclose(run_op("Deconvolution", [y, dw], dattrs)[0],
                               deconv_nd_reference(y, dw, (1,) * len(kernel), (0,) * len(kernel), (0,) * len(kernel),
                                                   groups), rtol=1e-10, atol=1e-10)
    check_grad("Deconvolution", [y[:1], dw], dattrs)


def test_pointwise_conv_writes_into_non_contiguous_outputs():
    x, w = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((4, 3, 1, 1))
    attrs = ops.get("Convolution").parse_attrs(dict(kernel=(1, 1), num_filter=4, no_bias=True))
    expected = run_op("Convolution", [x, w], attrs)[0]
    big = np.zeros((2, 4, 4, 5, 2))
    ops.get("Convolution").kernel("cpu")(ops.OpContext(np), attrs, [x, w], [big[..., 1]], [])
    np.testing.assert_allclose(big[..., 1], expected, rtol=1e-12)
    assert not big[..., 0].any()
