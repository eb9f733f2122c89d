"""L2Normalization, SVMOutput, UpSampling, BilinearResize2D, AdaptiveAvgPooling2D, GridGenerator,
BilinearSampler, SpatialTransformer, ROIPooling: numpy references, finite differences, shape inference."""
import numpy as np
import pytest

import ember as mx
from ember.base import ShapeError

from ._gradcheck import check_grad, run

RNG = np.random.default_rng(0)


def _check_visible_grad(name, x, attrs, eps=1e-6):
    """Finite differences of sum(w * output 0) only (hidden outputs carry no gradient in MXNet)."""
    from ._gradcheck import grads
    outs = run(name, [x], attrs, all_outputs=True)
    w = RNG.standard_normal(outs[0].shape)
    analytic = grads(name, [x], attrs, [w] + [np.zeros_like(o) for o in outs[1:]])[0]
    num = np.zeros(x.size)
    flat = x.reshape(-1)
    for i in range(x.size):
        old = flat[i]
        flat[i] = old + eps
        fp = float((run(name, [x], attrs, all_outputs=True)[0] * w).sum())
        flat[i] = old - eps
        fm = float((run(name, [x], attrs, all_outputs=True)[0] * w).sum())
        flat[i] = old
        num[i] = (fp - fm) / (2 * eps)
    np.testing.assert_allclose(np.asarray(analytic).reshape(-1), num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", ["instance", "channel", "spatial"])
def test_l2_normalization_reference_and_gradient(mode):
    x = RNG.standard_normal((2, 3, 2, 2))
    axes = {"instance": (1, 2, 3), "channel": (1,), "spatial": (2, 3)}[mode]
    out, norm = run("L2Normalization", [x], {"mode": mode}, all_outputs=True)
    want_norm = np.sqrt((x * x).sum(axis=axes, keepdims=True) + 1e-10)
    np.testing.assert_allclose(out, x / want_norm, rtol=1e-12)
    assert norm.size == want_norm.size
    _check_visible_grad("L2Normalization", x, {"mode": mode})


def test_l2_normalization_needs_enough_dims():
    s = mx.sym.L2Normalization(mx.sym.var("x"), mode="spatial")
    with pytest.raises(ShapeError):
        s.infer_shape(x=(2, 3))
    assert s.infer_shape(x=(2, 3, 4))[1] == [(2, 3, 4)]


def test_svm_output_forward_is_identity_and_label_is_inferred():
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_array_equal(run("SVMOutput", [x, np.array([0, 1, 2, 0], np.float32)]), x)
    s = mx.sym.SVMOutput(mx.sym.var("x"), mx.sym.var("label"))
    assert s.infer_shape(x=(4, 3))[0] == [(4, 3), (4,)]


def test_svm_output_gradient_l2_reference():
    from ._gradcheck import grads
    x = RNG.standard_normal((4, 3))
    lab = np.array([0, 1, 2, 0], np.float64)
    g = grads("SVMOutput", [x, lab], {"margin": 1.0}, [np.ones_like(x)])[0]
    want = np.empty_like(x)
    for i in range(4):
        for k in range(3):
            if k == lab[i]:
                want[i, k] = -2 * max(1 - x[i, k], 0)
            else:
                want[i, k] = 2 * max(1 + x[i, k], 0)
    np.testing.assert_allclose(g, want)


def test_upsampling_nearest_reference_gradient_and_errors():
    x = RNG.standard_normal((1, 2, 2, 3))
    out = run("UpSampling", [x], {"scale": 2, "sample_type": "nearest", "num_args": 1})
    np.testing.assert_array_equal(out, x.repeat(2, axis=2).repeat(2, axis=3))
    check_grad("UpSampling", [x], {"scale": 2, "sample_type": "nearest", "num_args": 1})
    y = RNG.standard_normal((1, 1, 4, 6))
    check_grad("UpSampling", [x, y], {"scale": 2, "sample_type": "nearest", "num_args": 2})
    s = mx.sym.UpSampling(mx.sym.var("a"), mx.sym.var("b"), scale=2, sample_type="nearest", num_args=2)
    assert s.infer_shape(a=(1, 2, 2, 3), b=(1, 1, 4, 6))[1] == [(1, 3, 4, 6)]
    with pytest.raises(ShapeError):
        s.infer_shape(a=(1, 2, 2, 3), b=(1, 1, 3, 6))


def test_upsampling_bilinear_gradient_and_weight_shape():
    x = RNG.standard_normal((1, 2, 3, 3))
    w = RNG.standard_normal((2, 1, 4, 4))
    check_grad("UpSampling", [x, w], {"scale": 2, "sample_type": "bilinear", "num_filter": 2, "num_args": 1})
    s = mx.sym.UpSampling(mx.sym.var("a"), scale=3, sample_type="bilinear", num_filter=2, num_args=1)
    args, outs, _ = s.infer_shape(a=(1, 2, 3, 3))
    assert args == [(1, 2, 3, 3), (2, 1, 5, 5)] and outs == [(1, 2, 9, 9)]


def _np_bilinear_resize(x, oh, ow, align):
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow))

    def src(i, n_in, n_out):
        if align:
            return i * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        return max((i + 0.5) * n_in / n_out - 0.5, 0.0)
    for i in range(oh):
        y = src(i, h, oh)
        y0 = min(int(y), h - 1)
        y1 = min(y0 + 1, h - 1)
        ly = y - y0
        for j in range(ow):
            xx = src(j, w, ow)
            x0 = min(int(xx), w - 1)
            x1 = min(x0 + 1, w - 1)
            lx = xx - x0
            out[:, :, i, j] = ((1 - ly) * ((1 - lx) * x[:, :, y0, x0] + lx * x[:, :, y0, x1])
                               + ly * ((1 - lx) * x[:, :, y1, x0] + lx * x[:, :, y1, x1]))
    return out


@pytest.mark.parametrize("align", [True, False])
def test_bilinear_resize_reference_and_gradient(align):
    x = RNG.standard_normal((1, 2, 3, 4))
    attrs = {"height": 5, "width": 3, "align_corners": align}
    np.testing.assert_allclose(run("_contrib_BilinearResize2D", [x], attrs), _np_bilinear_resize(x, 5, 3, align),
                               rtol=1e-12, atol=1e-12)
    check_grad("_contrib_BilinearResize2D", [x], attrs)


def test_bilinear_resize_like_mode():
    x = RNG.standard_normal((1, 2, 3, 4))
    like = np.zeros((1, 2, 6, 2))
    out = run("_contrib_BilinearResize2D", [x, like], {"mode": "like"})
    assert out.shape == (1, 2, 6, 2)
    check_grad("_contrib_BilinearResize2D", [x, like], {"mode": "like"}, wrt=[0])


def test_adaptive_avg_pooling_reference_and_gradient():
    x = RNG.standard_normal((1, 2, 7, 5))
    out = run("_contrib_AdaptiveAvgPooling2D", [x], {"output_size": (3, 2)})
    want = np.zeros((1, 2, 3, 2))
    for i in range(3):
        for j in range(2):
            hs, he = (i * 7) // 3, -(-(i + 1) * 7 // 3)
            ws, we = (j * 5) // 2, -(-(j + 1) * 5 // 2)
            want[:, :, i, j] = x[:, :, hs:he, ws:we].mean(axis=(2, 3))
    np.testing.assert_allclose(out, want, rtol=1e-12)
    check_grad("_contrib_AdaptiveAvgPooling2D", [x], {"output_size": (3, 2)})
    s = mx.sym.contrib.AdaptiveAvgPooling2D(mx.sym.var("x"), output_size=4)
    assert s.infer_shape(x=(2, 3, 9, 9))[1] == [(2, 3, 4, 4)]


def test_grid_generator_affine_identity_and_gradients():
    theta = np.array([[1, 0, 0, 0, 1, 0]], np.float64)
    grid = run("GridGenerator", [theta], {"transform_type": "affine", "target_shape": (3, 4)})
    np.testing.assert_allclose(grid[0, 0], np.tile(np.linspace(-1, 1, 4), (3, 1)))
    np.testing.assert_allclose(grid[0, 1], np.tile(np.linspace(-1, 1, 3)[:, None], (1, 4)))
    check_grad("GridGenerator", [RNG.standard_normal((2, 6))], {"transform_type": "affine", "target_shape": (3, 4)})
    check_grad("GridGenerator", [RNG.standard_normal((1, 2, 3, 4))], {"transform_type": "warp"})
    s = mx.sym.GridGenerator(mx.sym.var("loc"), transform_type="affine", target_shape=(5, 6))
    assert s.infer_shape(loc=(2, 6))[1] == [(2, 2, 5, 6)]
    with pytest.raises(ShapeError):
        s.infer_shape(loc=(2, 5))


def test_bilinear_sampler_identity_grid_reproduces_input():
    x = RNG.standard_normal((2, 3, 4, 5))
    theta = np.tile(np.array([[1.0, 0, 0, 0, 1, 0]]), (2, 1))
    grid = run("GridGenerator", [theta], {"transform_type": "affine", "target_shape": (4, 5)})
    np.testing.assert_allclose(run("BilinearSampler", [x, grid]), x, atol=1e-12)


def test_bilinear_sampler_gradients_off_pixel_boundaries():
    x = RNG.standard_normal((1, 2, 4, 5))
    # points strictly inside cells (and some outside the image), where the sampler is differentiable
    gx = np.array([[-0.9, -0.31, 0.12, 0.77], [1.3, -1.4, 0.55, 0.05]])
    gy = np.array([[-0.8, 0.2, 0.45, -0.1], [0.9, 0.1, -1.2, 0.6]])
    grid = np.stack([gx, gy])[None]
    check_grad("BilinearSampler", [x, grid], rtol=1e-5, atol=1e-6)


def test_spatial_transformer_equals_generator_then_sampler_and_gradient():
    x = RNG.standard_normal((1, 2, 4, 5))
    loc = np.array([[0.83, 0.11, 0.07, -0.13, 0.91, 0.06]])  # no grid point on a pixel boundary
    attrs = {"target_shape": (3, 3), "transform_type": "affine", "sampler_type": "bilinear"}
    grid = run("GridGenerator", [loc], {"transform_type": "affine", "target_shape": (3, 3)})
    np.testing.assert_allclose(run("SpatialTransformer", [x, loc], attrs), run("BilinearSampler", [x, grid]))
    check_grad("SpatialTransformer", [x, loc], attrs, rtol=1e-5, atol=1e-6)


def test_roi_pooling_reference_and_gradient():
    x = RNG.standard_normal((1, 2, 6, 6))
    rois = np.array([[0, 0, 0, 5, 5], [0, 2, 1, 4, 4]], np.float64)
    attrs = {"pooled_size": (2, 2), "spatial_scale": 1.0}
    out = run("ROIPooling", [x, rois], attrs)
    np.testing.assert_allclose(out[0, :, 0, 0], x[0, :, 0:3, 0:3].max(axis=(1, 2)))
    np.testing.assert_allclose(out[0, :, 1, 1], x[0, :, 3:6, 3:6].max(axis=(1, 2)))
    # roi 2: rows 1..4 (height 4), columns 2..4 (width 3): bins rows [1,3) [3,5), columns [2,4) [3,5)
    np.testing.assert_allclose(out[1, :, 1, 0], x[0, :, 3:5, 2:4].max(axis=(1, 2)))
    check_grad("ROIPooling", [x, rois], attrs, wrt=[0])
    s = mx.sym.ROIPooling(mx.sym.var("x"), mx.sym.var("rois"), pooled_size=(3, 3), spatial_scale=0.25)
    assert s.infer_shape(x=(2, 4, 8, 8), rois=(5, 5))[1] == [(5, 4, 3, 3)]
    with pytest.raises(ShapeError):
        s.infer_shape(x=(2, 4, 8, 8), rois=(5, 4))
