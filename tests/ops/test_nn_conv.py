"""Convolution and Deconvolution against a direct (loop) reference, gradients, shapes and errors."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import check_grad, run_op  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402

rng = np.random.default_rng(1)


def conv_reference(x, w, stride, pad, dilate, groups):
    """Direct 2-D convolution, one output pixel at a time."""
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, f, oh, ow))
    fg = f // groups
    for o in range(f):
        g = o // fg
        for y in range(oh):
            for z in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg,
                           y * stride[0]:y * stride[0] + dilate[0] * (kh - 1) + 1:dilate[0],
                           z * stride[1]:z * stride[1] + dilate[1] * (kw - 1) + 1:dilate[1]]
                out[:, o, y, z] = (patch * w[o]).sum(axis=(1, 2, 3))
    return out


def deconv_reference(x, w, stride, pad, adj, groups, num_filter):
    """Transposed convolution by scattering every input pixel times the kernel."""
    n, c, h, wd = x.shape
    _, fg, kh, kw = w.shape
    full = np.zeros((n, num_filter, (h - 1) * stride[0] + kh + adj[0], (wd - 1) * stride[1] + kw + adj[1]))
    cg = c // groups
    for ci in range(c):
        g = ci // cg
        for y in range(h):
            for z in range(wd):
                full[:, g * fg:(g + 1) * fg, y * stride[0]:y * stride[0] + kh, z * stride[1]:z * stride[1] + kw] += \
                    x[:, ci, y, z][:, None, None, None] * w[ci][None]
    oh = (h - 1) * stride[0] + kh - 2 * pad[0] + adj[0]
    ow = (wd - 1) * stride[1] + kw - 2 * pad[1] + adj[1]
    return full[:, :, pad[0]:pad[0] + oh, pad[1]:pad[1] + ow]


@pytest.mark.parametrize("stride,pad,dilate,groups", [
    ((1, 1), (0, 0), (1, 1), 1), ((2, 1), (1, 2), (1, 1), 1), ((1, 2), (1, 1), (2, 1), 2), ((3, 3), (2, 0), (1, 1), 4),
])
def test_conv2d_forward_matches_reference(stride, pad, dilate, groups):
    x, w, b = rng.standard_normal((2, 4, 9, 8)), rng.standard_normal((8, 4 // groups, 3, 2)), rng.standard_normal(8)
    attrs = dict(kernel=(3, 2), num_filter=8, stride=stride, pad=pad, dilate=dilate, num_group=groups)
    out = run_op("Convolution", [x, w, b], attrs)[0]
    np.testing.assert_allclose(out, conv_reference(x, w, stride, pad, dilate, groups) + b[None, :, None, None],
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("xs,kernel,stride,pad,dilate,bias", [
    ((2, 3, 30, 29), (3, 3), (1, 1), (1, 1), (1, 1), True),    # >= 28x28 outputs: one GEMM per image
    ((1, 2, 63, 60), (7, 7), (2, 2), (3, 3), (1, 1), False),   # a stem-like strided 7x7
    ((1, 3, 32, 33), (3, 2), (1, 1), (0, 2), (2, 1), True),    # dilated, uneven padding, no pad rows
    ((1, 4, 57, 58), (1, 1), (2, 2), (0, 0), (1, 1), False),   # a strided 1x1 (a subsample + GEMM)
    ((2, 3, 15, 14), (1, 1), (1, 1), (0, 0), (1, 1), True),    # expanding 1x1 with bias: bias in the GEMM
])
def test_conv2d_large_maps_per_image_path(xs, kernel, stride, pad, dilate, bias):
    x, w, b = rng.standard_normal(xs), rng.standard_normal((5, xs[1]) + kernel), rng.standard_normal(5)
    attrs = dict(kernel=kernel, num_filter=5, stride=stride, pad=pad, dilate=dilate, no_bias=not bias)
    out = run_op("Convolution", [x, w, b] if bias else [x, w], attrs)[0]
    assert out.shape[2] * out.shape[3] >= (196 if kernel == (1, 1) else 784)
    ref = conv_reference(x, w, stride, pad, dilate, 1) + (b[None, :, None, None] if bias else 0)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-10)


def test_deconv_gradient_of_large_output_with_adj():
    # the Deconvolution's backward runs conv_forward with a cropping (negative) pad_after
    attrs = dict(kernel=(3, 3), num_filter=2, stride=(1, 1), pad=(1, 1), no_bias=True)
    x, w = rng.standard_normal((1, 3, 29, 30)), rng.standard_normal((3, 2, 3, 3))
    out = run_op("Deconvolution", [x, w], attrs)[0]
    np.testing.assert_allclose(out, deconv_reference(x, w, (1, 1), (1, 1), (0, 0), 1, 2), rtol=1e-10, atol=1e-10)
    check_grad("Deconvolution", [rng.standard_normal((1, 2, 28, 28)), rng.standard_normal((2, 2, 3, 3))],
               dict(kernel=(3, 3), num_filter=2, stride=(2, 2), pad=(0, 0), adj=(1, 1), no_bias=True))


def test_conv1d_is_conv2d_with_height_one():
    x, w = rng.standard_normal((2, 3, 11)), rng.standard_normal((5, 3, 4))
    out = run_op("Convolution", [x, w], dict(kernel=(4,), num_filter=5, stride=(2,), pad=(1,), no_bias=True))[0]
    ref = conv_reference(x[:, :, None], w[:, :, None], (1, 2), (0, 1), (1, 1), 1)[:, :, 0]
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-10)


def test_conv_float32_stays_float32():
    x, w = rng.standard_normal((1, 2, 5, 5)).astype(np.float32), rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    out = run_op("Convolution", [x, w, np.zeros(3, np.float32)], dict(kernel=(3, 3), num_filter=3))[0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, conv_reference(x, w, (1, 1), (0, 0), (1, 1), 1), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs,xs,ws", [
    (dict(kernel=(3, 3), num_filter=4, pad=(1, 1)), (2, 3, 5, 4), (4, 3, 3, 3)),
    (dict(kernel=(2, 3), num_filter=4, stride=(2, 2), dilate=(2, 1), num_group=2), (1, 4, 7, 6), (4, 2, 2, 3)),
    (dict(kernel=(3,), num_filter=2, stride=(2,), pad=(2,)), (2, 3, 7), (2, 3, 3)),
])
def test_conv_gradients(attrs, xs, ws):
    check_grad("Convolution", [rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(attrs["num_filter"])],
               attrs)


@pytest.mark.parametrize("stride,pad,adj,groups", [((1, 1), (0, 0), (0, 0), 1), ((2, 2), (1, 0), (1, 0), 1),
                                                   ((2, 3), (1, 1), (1, 2), 2)])
def test_deconv_forward_matches_reference(stride, pad, adj, groups):
    x, w = rng.standard_normal((2, 4, 3, 4)), rng.standard_normal((4, 6 // groups, 3, 3))
    attrs = dict(kernel=(3, 3), num_filter=6, stride=stride, pad=pad, adj=adj, num_group=groups)
    out = run_op("Deconvolution", [x, w], attrs)[0]
    np.testing.assert_allclose(out, deconv_reference(x, w, stride, pad, adj, groups, 6), rtol=1e-10, atol=1e-10)


def test_deconv_target_shape_sets_output_size():
    op = ops.get("Deconvolution")
    a = op.parse_attrs(dict(kernel=(4, 4), num_filter=3, stride=(2, 2), target_shape=(8, 9)))
    ins, outs, _ = op.shapes(a, [(1, 2, 4, 4), None])
    assert outs == [(1, 3, 8, 9)] and ins[1] == (2, 3, 4, 4)
    with pytest.raises(ShapeError, match="target_shape"):
        op.shapes(a.copy() | {"target_shape": (40, 40)}, [(1, 2, 4, 4), None])


@pytest.mark.parametrize("attrs,xs,ws", [
    (dict(kernel=(3, 3), num_filter=2, stride=(2, 2), pad=(1, 1), adj=(1, 1), no_bias=False), (1, 3, 3, 2), (3, 2, 3, 3)),
    (dict(kernel=(2,), num_filter=4, stride=(3,), num_group=2, no_bias=False), (2, 2, 4), (2, 2, 2)),
])
def test_deconv_gradients(attrs, xs, ws):
    check_grad("Deconvolution", [rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(attrs["num_filter"])],
               attrs)


def test_infer_shape_fills_weight():
    op = ops.get("Convolution")
    a = op.parse_attrs({"kernel": "(5, 5)", "num_filter": "20", "stride": "(2, 2)"})
    ins, outs, _ = op.shapes(a, [(64, 1, 28, 28), None, None])
    assert ins[1:] == [(20, 1, 5, 5), (20,)] and outs == [(64, 20, 12, 12)]


@pytest.mark.parametrize("attrs,shape,err,msg", [
    (dict(kernel=(3, 3), num_filter=4), (2, 3, 5), ShapeError, "4-D"),
    (dict(kernel=(3, 3), num_filter=4, num_group=2), (2, 3, 5, 5), ShapeError, "divisible by num_group"),
    (dict(kernel=(7, 7), num_filter=4), (2, 3, 5, 5), ShapeError, "does not fit"),
    (dict(kernel=(3, 3, 3, 3), num_filter=4), (2, 3, 5, 5, 5, 5), OperatorError, "1-D, 2-D and 3-D"),
    (dict(kernel=(3, 3), num_filter=4, stride=(0, 1)), (2, 3, 5, 5), OperatorError, "stride"),
    (dict(kernel=(3, 3), num_filter=4, pad=(1,)), (2, 3, 5, 5), OperatorError, "pad"),
    (dict(kernel=(3, 3), num_filter=4, layout="NCDHW"), (2, 3, 5, 5), OperatorError, "layout"),
])
def test_errors_name_the_problem(attrs, shape, err, msg):
    op = ops.get("Convolution")
    with pytest.raises(err, match=f"Convolution.*{msg}"):
        op.shapes(op.parse_attrs(attrs), [shape, None, None])


def test_weight_mismatch_is_shape_error():
    op = ops.get("Convolution")
    with pytest.raises(ShapeError, match="Convolution: weight"):
        op.shapes(op.parse_attrs(dict(kernel=(3, 3), num_filter=4)), [(2, 3, 5, 5), (4, 2, 3, 3), None])


@pytest.mark.parametrize("stride,pad,dilate", [((1, 1), (1, 1), (1, 1)), ((2, 1), (0, 2), (2, 1))])
def test_depthwise_matches_reference_and_gradients(stride, pad, dilate):
    x, w = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((3, 1, 3, 2))
    attrs = dict(kernel=(3, 2), num_filter=3, num_group=3, stride=stride, pad=pad, dilate=dilate, no_bias=True)
    np.testing.assert_allclose(run_op("Convolution", [x, w], attrs)[0],
                               conv_reference(x, w, stride, pad, dilate, 3), rtol=1e-10, atol=1e-10)
    check_grad("Convolution", [x[:1, :, :5, :4], w], attrs)
    check_grad("Deconvolution", [x[:1, :, :3, :3], w], dict(attrs, adj=(0, 0)) if stride == (1, 1) else
               dict(attrs, pad=(0, 1)))


def test_kernels_write_into_non_contiguous_outputs():
    # outputs may be views into planned storage: results must land in the caller's buffer
    x, w = rng.standard_normal((2, 3, 9)), rng.standard_normal((4, 3, 3))
    attrs = dict(kernel=(3,), num_filter=4, no_bias=True)
    expected = run_op("Convolution", [x, w], attrs)[0]
    op = ops.get("Convolution")
    big = np.zeros((2, 8, 7))
    out = big[:, ::2, :]
    assert not out.flags.c_contiguous
    op.kernel("cpu")(ops.OpContext(np), op.parse_attrs(attrs), [x, w], [out], [])
    np.testing.assert_allclose(big[:, ::2], expected, rtol=1e-12)
    bop = ops.get("_backward_Convolution")
    grads = [np.zeros((2, 3, 9, 2))[..., 0], np.zeros((4, 3, 3, 2))[..., 1]]
    bop.kernel("cpu")(ops.OpContext(np), bop.parse_attrs(attrs), [np.ones_like(expected), x, w], grads, [])
    ref = run_op("_backward_Convolution", [np.ones_like(expected), x, w], attrs)
    np.testing.assert_allclose(grads[0], ref[0], rtol=1e-12)
    np.testing.assert_allclose(grads[1], ref[1], rtol=1e-12)


@pytest.mark.parametrize("name,shapes,attrs", [
    ("Convolution", [(2, 4, 6, 6), (5, 4, 3, 3), (5,)], dict(kernel=(3, 3), num_filter=5, pad=(1, 1))),
    ("Deconvolution", [(2, 4, 3, 3), (4, 5, 3, 3)], dict(kernel=(3, 3), num_filter=5, stride=(2, 2))),
    ("FullyConnected", [(3, 8), (4, 8), (4,)], dict(num_hidden=4)),
])
def test_float16_runs_in_float32_and_returns_float16(name, shapes, attrs):
    ins = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    out = run_op(name, ins, attrs)[0]
    ref = run_op(name, [x.astype(np.float32) for x in ins], attrs)[0]
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, ref.astype(np.float16), rtol=1e-3, atol=1e-3)
    head = rng.standard_normal(out.shape).astype(np.float16)
    g16 = run_op(f"_backward_{name}", [head] + ins[:2], attrs)
    g32 = run_op(f"_backward_{name}", [head.astype(np.float32)] + [x.astype(np.float32) for x in ins[:2]], attrs)
    for a, b in zip(g16, g32):
        assert a.dtype == np.float16
        np.testing.assert_allclose(a, b.astype(np.float16), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("xs,ws,pad,groups", [
    ((2, 3, 30, 30), (5, 3, 3, 3), 1, 1),   # one GEMM per image
    ((2, 4, 15, 14), (8, 4, 1, 1), 0, 1),   # expanding 1x1: shift inside the GEMM
    ((2, 8, 15, 14), (4, 8, 1, 1), 0, 1),   # reducing 1x1: shift and relu per image
    ((2, 4, 9, 9), (6, 4, 3, 3), 1, 1),     # batched im2col
    ((2, 4, 9, 9), (4, 2, 3, 3), 1, 2),     # grouped
])
def test_conv_forward_epilogue_shift_and_relu(xs, ws, pad, groups):
    from ember.ops import nn_conv
    geo = nn_conv.Geometry(ws[2:], (1, 1), (1, 1), (pad, pad), (pad, pad), groups)
    x, w, shift = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    out = np.empty((xs[0], ws[0]) + geo.out_size(xs[2:]))
    nn_conv.conv_forward(np, x, w, geo, out, shift, relu=True)
    ref = conv_reference(x, w, (1, 1), (pad, pad), (1, 1), groups) + shift[None, :, None, None]
    np.testing.assert_allclose(out, np.maximum(ref, 0), rtol=1e-10, atol=1e-10)
