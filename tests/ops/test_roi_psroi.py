"""_contrib_PSROIPooling against a loop reference (R-FCN's rule) and its gradient against finite differences."""
import math

import numpy as np
import pytest

import ember as mx

from ._gradcheck import grads, run


def _reference(data, rois, scale, k_out, p, g):
    h, w = data.shape[2:]
    out = np.zeros((len(rois), k_out, p, p))
    rnd = lambda v: math.copysign(math.floor(abs(v) + 0.5), v)  # noqa: E731 - C's roundf
    for r, roi in enumerate(rois):
        x1, y1 = rnd(roi[1]) * scale, rnd(roi[2]) * scale
        x2, y2 = (rnd(roi[3]) + 1) * scale, (rnd(roi[4]) + 1) * scale
        bh, bw = max(y2 - y1, 0.1) / p, max(x2 - x1, 0.1) / p
        for k in range(k_out):
            for i in range(p):
                for j in range(p):
                    h0, h1 = [min(max(f(v), 0), h) for f, v in ((math.floor, i * bh + y1), (math.ceil, (i + 1) * bh + y1))]
                    w0, w1 = [min(max(f(v), 0), w) for f, v in ((math.floor, j * bw + x1), (math.ceil, (j + 1) * bw + x1))]
                    c = (k * g + min(i * g // p, g - 1)) * g + min(j * g // p, g - 1)
                    if h1 > h0 and w1 > w0:
                        out[r, k, i, j] = data[int(roi[0]), c, h0:h1, w0:w1].mean()
    return out


@pytest.mark.parametrize("p,g", [(3, 3), (2, 4)])
def test_psroipooling_matches_the_reference_and_differences(p, g):
    k_out = 2
    data = np.random.default_rng(p).standard_normal((2, k_out * g * g, 14, 14))
    rois = np.array([[0, 10, 22, 161, 173], [1, 20, 15, 154, 160], [1, -3, 2.5, 40, 30.5], [0, 100, 100, 90, 95]])
    attrs = {"spatial_scale": 0.0625, "output_dim": k_out, "pooled_size": p, "group_size": g}
    out = run("_contrib_PSROIPooling", [data, rois], attrs)
    np.testing.assert_allclose(out, _reference(data, rois, 0.0625, k_out, p, g), rtol=1e-12)
    wgt = np.random.default_rng(0).standard_normal(out.shape)
    g_data, g_rois = grads("_contrib_PSROIPooling", [data, rois], attrs, [wgt])
    assert not g_rois.any()
    flat = data.reshape(-1)
    for idx in np.random.default_rng(1).choice(flat.size, 30, replace=False):
        old = flat[idx]
        flat[idx] = old + 1e-4
        fp = (run("_contrib_PSROIPooling", [data, rois], attrs) * wgt).sum()
        flat[idx] = old - 1e-4
        fm = (run("_contrib_PSROIPooling", [data, rois], attrs) * wgt).sum()
        flat[idx] = old
        assert abs((fp - fm) / 2e-4 - g_data.reshape(-1)[idx]) < 1e-7


def test_psroipooling_channel_check():
    s = mx.sym.contrib.PSROIPooling(mx.sym.var("d"), mx.sym.var("r"), spatial_scale=1.0, output_dim=2, pooled_size=3)
    assert s.infer_shape(d=(1, 18, 6, 6), r=(5, 5))[1] == [(5, 2, 3, 3)]
    with pytest.raises(mx.MXNetError, match="channels"):
        s.infer_shape(d=(1, 10, 6, 6), r=(5, 5))
