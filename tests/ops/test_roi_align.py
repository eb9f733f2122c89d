"""_contrib_ROIAlign against a per-sample numpy reference and finite differences (data gradient)."""
import numpy as np
import pytest

import ember as mx

from ._gradcheck import grads, run


def _bilinear(img, y, x):
    h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0, y = h - 1, float(h - 1)
    if x0 >= w - 1:
        x0, x = w - 1, float(w - 1)
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1]
            + ly * (1 - lx) * img[y1, x0] + ly * lx * img[y1, x1])


def _reference(data, rois, ph, pw, scale, ratio, sensitive, aligned):
    c_out = data.shape[1] // (ph * pw) if sensitive else data.shape[1]
    out = np.zeros((len(rois), c_out, ph, pw))
    off = 0.5 if aligned else 0.0
    for r, roi in enumerate(rois):
        x1, y1, x2, y2 = roi[1:] * scale - off
        rw, rh = (x2 - x1, y2 - y1) if aligned else (max(x2 - x1, 1.0), max(y2 - y1, 1.0))
        gh = ratio if ratio > 0 else int(np.ceil(rh / ph))
        gw = ratio if ratio > 0 else int(np.ceil(rw / pw))
        for c in range(c_out):
            for i in range(ph):
                for j in range(pw):
                    cin = c * ph * pw + i * pw + j if sensitive else c
                    img = data[int(roi[0]), cin]
                    acc = sum(_bilinear(img, y1 + i * rh / ph + (a + 0.5) * rh / ph / gh,
                                        x1 + j * rw / pw + (b + 0.5) * rw / pw / gw)
                              for a in range(gh) for b in range(gw))
                    out[r, c, i, j] = acc / (gh * gw)
    return out


ROIS = np.array([[0, 1.2, 0.5, 7.7, 6.1], [1, -2.0, 3.0, 20.0, 8.5], [1, 4.0, 4.0, 4.5, 4.2]])


@pytest.mark.parametrize("ratio,sensitive,aligned", [(-1, False, False), (2, False, False),
                                                     (-1, True, False), (3, False, True)])
def test_roi_align_matches_the_reference(ratio, sensitive, aligned):
    data = np.random.default_rng(0).standard_normal((2, 8, 9, 11))
    attrs = {"pooled_size": (2, 2), "spatial_scale": 0.9, "sample_ratio": ratio,
             "position_sensitive": sensitive, "aligned": aligned}
    out = run("_contrib_ROIAlign", [data, ROIS], attrs)
    np.testing.assert_allclose(out, _reference(data, ROIS, 2, 2, 0.9, ratio, sensitive, aligned), atol=1e-10)
    # the map is linear in data: its gradient is exact against central differences of sum(w * out)
    w = np.random.default_rng(1).standard_normal(out.shape)
    g_data, g_rois = grads("_contrib_ROIAlign", [data, ROIS], attrs, [w])
    assert not g_rois.any()
    flat = data.reshape(-1)
    for i in np.random.default_rng(2).choice(flat.size, 25, replace=False):
        old = flat[i]
        flat[i] = old + 1e-3
        fp = (run("_contrib_ROIAlign", [data, ROIS], attrs) * w).sum()
        flat[i] = old - 1e-3
        fm = (run("_contrib_ROIAlign", [data, ROIS], attrs) * w).sum()
        flat[i] = old
        assert abs((fp - fm) / 2e-3 - g_data.reshape(-1)[i]) < 1e-7


def test_roi_align_errors_and_symbol():
    s = mx.sym.contrib.ROIAlign(mx.sym.var("d"), mx.sym.var("r"), pooled_size=(3, 3), spatial_scale=1.0,
                                position_sensitive=True)
    assert s.infer_shape(d=(1, 18, 5, 5), r=(4, 5))[1] == [(4, 2, 3, 3)]
    with pytest.raises(mx.MXNetError, match="divisible"):
        s.infer_shape(d=(1, 10, 5, 5), r=(4, 5))
    with pytest.raises(mx.MXNetError, match="rois must be"):
        mx.nd.contrib.ROIAlign(mx.nd.ones((1, 1, 4, 4)), mx.nd.ones((2, 4)), pooled_size=(2, 2), spatial_scale=1.0)


def _rotated_reference(data, rois, ph, pw, scale, ratio):
    out = np.zeros((len(rois), data.shape[1], ph, pw))
    for r, roi in enumerate(rois):
        cx, cy, rw, rh = roi[1:5] * scale
        th = roi[5] * np.pi / 180.0
        rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = ratio if ratio > 0 else int(np.ceil(rh / ph))
        gw = ratio if ratio > 0 else int(np.ceil(rw / pw))
        for c in range(data.shape[1]):
            for i in range(ph):
                for j in range(pw):
                    acc = 0.0
                    for a in range(gh):
                        for b in range(gw):
                            yy = -rh / 2 + i * rh / ph + (a + 0.5) * rh / ph / gh
                            xx = -rw / 2 + j * rw / pw + (b + 0.5) * rw / pw / gw
                            acc += _bilinear(data[int(roi[0]), c], yy * np.cos(th) - xx * np.sin(th) + cy,
                                             xx * np.cos(th) + yy * np.sin(th) + cx)
                    out[r, c, i, j] = acc / (gh * gw)
    return out


@pytest.mark.parametrize("ratio", [-1, 2])
def test_rotated_roi_align_matches_the_reference(ratio):
    data = np.random.default_rng(3).standard_normal((2, 3, 10, 12))
    rois = np.array([[0, 5, 4, 6, 3, 30], [1, 2, 8, 9, 5, 150], [1, 6, 6, 0.5, 0.5, 0], [0, 11, 1, 20, 12, -45]])
    out = run("_contrib_RROIAlign", [data, rois], {"pooled_size": (2, 3), "spatial_scale": 0.8,
                                                    "sampling_ratio": ratio})
    np.testing.assert_allclose(out, _rotated_reference(data, rois, 2, 3, 0.8, ratio), atol=1e-10)
