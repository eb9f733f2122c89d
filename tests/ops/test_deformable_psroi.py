"""_contrib_DeformablePSROIPooling against MXNet 1.9.1's CPU kernel (fixtures from
tests/ops/fixtures/make_deformable_psroi_fixtures.py: trans on and off, groups and parts off the pooled grid,
ROIs past the image and degenerate, float64), finite differences of its data and trans gradients, symbol
inference, the hidden top_count, and the errors of bad inputs."""
import json
import os

import numpy as np
import pytest

import ember as mx
from ember import autograd
from ember.base import MXNetError

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
with open(os.path.join(HERE, "deformable_psroi.json")) as _f:
    CASES = json.load(_f)["cases"]
DATA = np.load(os.path.join(HERE, "deformable_psroi.npz"))


def _call(inputs, attrs, head=None, wrt=()):
    xs = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
    for i in wrt:
        xs[i].attach_grad()
    with autograd.record():
        out = mx.nd.contrib.DeformablePSROIPooling(*xs, **attrs)
    if head is not None:
        out.backward(mx.nd.array(head, dtype=head.dtype))
    return out.asnumpy(), [xs[i].grad.asnumpy() for i in wrt]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_matches_mxnet(k):
    case = CASES[k]
    inputs = [DATA[f"c{k}_in{i}"] for i in range(case["n_in"])]
    out, grads = _call(inputs, case["attrs"], DATA[f"c{k}_w"], case["wrt"])
    want = DATA[f"c{k}_out"]
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    for i, g in zip(case["wrt"], grads):
        np.testing.assert_allclose(g, DATA[f"c{k}_grad{i}"], rtol=1e-4, atol=1e-5, err_msg=f"gradient of input {i}")


def test_gradients_against_finite_differences():
    """float64: the data and trans gradients are the derivatives of the forward (trans moved only where no
    sample crosses a pixel edge or the map's border, where the interpolation has a kink)."""
    rs = np.random.RandomState(3)
    attrs = dict(spatial_scale=0.125, output_dim=2, group_size=2, pooled_size=2, sample_per_part=2, trans_std=0.1)
    data = rs.uniform(-1, 1, (1, 8, 8, 8))
    rois = np.array([[0, 9.0, 11.0, 44.0, 50.0], [0, 3.0, 5.0, 30.0, 21.0]])
    trans = rs.uniform(-0.3, 0.3, (2, 4, 2, 2))
    head = rs.standard_normal((2, 2, 2, 2))
    _, (gd, gt) = _call([data, rois, trans], attrs, head, wrt=(0, 2))

    def loss(d, t):
        return float((_call([d, rois, t], attrs)[0] * head).sum())
    eps = 1e-6
    for idx in [(0, 1, 3, 4), (0, 5, 2, 2), (0, 7, 6, 5), (0, 0, 4, 3)]:
        e = np.zeros_like(data)
        e[idx] = eps
        fd = (loss(data + e, trans) - loss(data - e, trans)) / (2 * eps)
        assert abs(gd[idx] - fd) <= 1e-6 * (1 + abs(fd)), (idx, gd[idx], fd)
    for idx in [(0, 0, 0, 0), (0, 1, 1, 0), (1, 2, 0, 1), (1, 3, 1, 1)]:
        e = np.zeros_like(trans)
        e[idx] = eps
        fd = (loss(data, trans + e) - loss(data, trans - e)) / (2 * eps)
        assert abs(gt[idx] - fd) <= 1e-5 * (1 + abs(fd)), (idx, gt[idx], fd)
    assert np.abs(gt).sum() > 0 and np.abs(gd).sum() > 0


def test_symbol_inference_and_hidden_top_count():
    sym = mx.sym.contrib.DeformablePSROIPooling(mx.sym.var("data"), mx.sym.var("rois"), mx.sym.var("trans"),
                                                spatial_scale=0.0625, output_dim=2, group_size=3, pooled_size=3,
                                                sample_per_part=2, trans_std=0.1, name="dps")
    assert sym.list_arguments() == ["data", "rois", "trans"] and sym.list_outputs() == ["dps_output"]
    _, outs, _ = sym.infer_shape(data=(2, 18, 10, 12), rois=(4, 5), trans=(4, 4, 3, 3))
    assert outs == [(4, 2, 3, 3)]
    no_trans = mx.sym.contrib.DeformablePSROIPooling(mx.sym.var("data"), mx.sym.var("rois"), spatial_scale=0.5,
                                                     output_dim=1, group_size=1, pooled_size=2, no_trans=True)
    assert no_trans.list_arguments() == ["data", "rois"]
    k = 0   # the hidden count: samples inside the map per bin (all 4 for the first case's first ROI)
    count = mx.nd.contrib.DeformablePSROIPooling(*[mx.nd.array(DATA[f"c{k}_in{i}"]) for i in range(3)],
                                                 **CASES[k]["attrs"])
    assert count.shape == DATA[f"c{k}_out"].shape


@pytest.mark.parametrize("change, match", [
    (dict(data=np.zeros((1, 8, 6, 6), np.float32)), "channels"),
    (dict(rois=np.zeros((2, 4), np.float32)), "rois must be"),
    (dict(trans=np.zeros((2, 4, 3, 3), np.float32)), "trans must be"),
    (dict(trans=np.zeros((3, 4, 2, 2), np.float32)), "rows"),
    (dict(rois=np.array([[2, 0, 0, 8, 8], [0, 0, 0, 8, 8]], np.float32)), "batch index 2"),
    (dict(attrs=dict(sample_per_part=0)), "sample_per_part"),
    (dict(attrs=dict(trans_std=1.5)), "trans_std"),
    (dict(data=np.zeros((1, 18, 6, 6))), "dtype|mix"),
])
def test_bad_inputs_raise_clear_errors(change, match):
    arrays = dict(data=np.zeros((1, 18, 6, 6), np.float32), rois=np.array([[0, 0, 0, 8, 8], [0, 1, 1, 5, 5]], np.float32),
                  trans=np.zeros((2, 4, 2, 2), np.float32))
    attrs = dict(spatial_scale=0.5, output_dim=2, group_size=3, pooled_size=2, sample_per_part=2, trans_std=0.1)
    attrs.update(change.pop("attrs", {}))
    arrays.update(change)
    with pytest.raises(MXNetError, match=match):
        mx.nd.contrib.DeformablePSROIPooling(*[mx.nd.array(arrays[n], dtype=arrays[n].dtype)
                                               for n in ("data", "rois", "trans")], **attrs).wait_to_read()


def test_hybridized_block_equals_imperative():
    """Inside a hybridized Gluon block (one cached graph: forward, hidden output, backward) the results are
    the imperative call's."""
    k = 0
    inputs = [DATA[f"c{k}_in{i}"] for i in range(CASES[k]["n_in"])]
    attrs, head = CASES[k]["attrs"], DATA[f"c{k}_w"]

    class Pool(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, data, rois, trans):
            return F.contrib.DeformablePSROIPooling(data, rois, trans, **attrs) * 2

    got = {}
    for hybrid in (False, True):
        block = Pool()
        if hybrid:
            block.hybridize()
        xs = [mx.nd.array(x) for x in inputs]
        for x in xs:
            x.attach_grad()
        with autograd.record():
            out = block(*xs)
        out.backward(mx.nd.array(head))
        got[hybrid] = [out.asnumpy()] + [xs[i].grad.asnumpy() for i in (0, 2)]
    for a, b in zip(got[False], got[True]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[True][0], 2 * DATA[f"c{k}_out"], rtol=1e-5, atol=1e-6)
