"""MXNet 1.9.1's operator breadth: every operator below exists under MXNet's name in the namespaces
MXNet puts it in (mx.nd / mx.sym and their linalg, contrib, image, random submodules), and each
differentiable one passes a finite-difference gradient check through a symbol, an executor and
the symbolic gradient pass (`mx.test_utils.check_numeric_gradient`, float64).

Where each name lives was read off MXNet 1.9.1 itself (`hasattr(mxnet.nd..., name)`)."""
import json
import os

import numpy as np
import pytest

import ember as mx
from ember.test_utils import check_numeric_gradient

# (namespace under mx.nd / mx.sym, name, in mx.nd, in mx.sym): as MXNet 1.9.1 has them
PRESENT = [
    ("", "maximum", True, True), ("", "minimum", True, True), ("", "pow", False, True),
    ("", "power", True, True), ("", "hypot", False, True), ("", "UpSampling", True, True),
    ("", "InstanceNorm", True, True), ("", "GroupNorm", True, True), ("", "L2Normalization", True, True),
    ("", "softmin", True, True), ("", "softmax_cross_entropy", True, True), ("", "ctc_loss", True, True),
    ("", "CTCLoss", True, True), ("", "SVMOutput", True, True), ("", "ROIPooling", True, True),
    ("", "Correlation", True, True), ("", "SpatialTransformer", True, True), ("", "GridGenerator", True, True),
    ("", "BilinearSampler", True, True), ("", "split_v2", True, True), ("", "batch_take", True, True),
    ("", "im2col", True, True), ("", "col2im", True, True), ("", "histogram", True, True),
    ("", "multi_all_finite", True, True), ("", "reset_arrays", True, True), ("", "moveaxis", True, False),
    ("", "linspace", True, True), ("", "eye", True, True), ("", "onehot_encode", True, False), ("", "choose_element_0index", True, True),
    ("", "fill_element_0index", True, True), ("", "Convolution", True, True), ("", "Deconvolution", True, True),
    ("", "Pooling", True, True), ("", "ravel_multi_index", True, True), ("", "CachedOp", True, False),
    ("contrib", "isnan", True, False), ("contrib", "isinf", True, False), ("contrib", "isfinite", True, False),
    ("linalg", "syevd", True, True), ("linalg", "gelqf", True, True), ("linalg", "extracttrian", True, True),
    ("linalg", "maketrian", True, True), ("linalg", "inverse", True, True), ("linalg", "det", True, True),
    ("linalg", "slogdet", True, True), ("linalg", "gemm", True, True),
    ("contrib", "BilinearResize2D", True, True), ("contrib", "AdaptiveAvgPooling2D", True, True),
    ("contrib", "boolean_mask", True, True), ("contrib", "SyncBatchNorm", True, True),
    ("contrib", "DeformablePSROIPooling", True, True), ("", "IdentityAttachKLSparseReg", True, True),
    ("contrib", "fft", True, True), ("contrib", "ifft", True, True), ("contrib", "count_sketch", True, True),
    ("contrib", "index_copy", True, True), ("contrib", "index_array", True, True),
    ("contrib", "arange_like", True, True), ("contrib", "rand_zipfian", True, True),
    ("contrib", "interleaved_matmul_selfatt_qk", True, True),
    ("contrib", "interleaved_matmul_selfatt_valatt", True, True),
    ("contrib", "interleaved_matmul_encdec_qk", True, True),
    ("contrib", "interleaved_matmul_encdec_valatt", True, True),
    ("random", "negative_binomial", True, True), ("random", "generalized_negative_binomial", True, True),
    ("random", "shuffle", True, True), ("contrib", "box_iou", True, True), ("contrib", "box_nms", True, True), ("contrib", "box_encode", True, True),
    ("contrib", "box_decode", True, True), ("contrib", "bipartite_matching", True, True),
    ("contrib", "MultiBoxPrior", True, True), ("contrib", "MultiBoxDetection", True, True),
    ("contrib", "MultiBoxTarget", True, True), ("contrib", "round_ste", True, True), ("contrib", "sign_ste", True, True), ("sparse", "retain", True, True), ("sparse", "dot", True, True),
] + [("image", n, True, True) for n in (
    "to_tensor", "normalize", "resize", "crop", "flip_left_right", "flip_top_bottom", "random_flip_left_right",
    "random_flip_top_bottom", "random_brightness", "random_contrast", "random_saturation", "random_hue",
    "random_color_jitter", "adjust_lighting", "random_lighting")
] + [("", f"random_pdf_{d}", True, True) for d in (
    "uniform", "normal", "gamma", "exponential", "poisson", "negative_binomial", "generalized_negative_binomial",
    "dirichlet")]


def _lookup(root, namespace, name):
    mod = getattr(root, namespace) if namespace else root
    return getattr(mod, name, None)


@pytest.mark.parametrize("namespace,name,in_nd,in_sym", PRESENT,
                         ids=[f"{p[0]}.{p[1]}".lstrip(".") for p in PRESENT])
def test_operator_is_where_mxnet_has_it(namespace, name, in_nd, in_sym):
    if in_nd:
        assert callable(_lookup(mx.nd, namespace, name)), f"mx.nd.{namespace}.{name} is missing"
    if in_sym:
        assert callable(_lookup(mx.sym, namespace, name)), f"mx.sym.{namespace}.{name} is missing"


# -- finite-difference gradients through symbols ----------------------------------------------------------
R = np.random.default_rng(7)
V = mx.sym.var


def _u(*shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, size=shape)


def _spd(n):
    a = R.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


# label -> (symbol, location, extra check_numeric_gradient arguments)
def _cases():
    s = mx.sym
    yield "maximum", s.maximum(V("a"), V("b")), {"a": _u(3, 4), "b": _u(3, 4) + 0.05}, {}
    yield "minimum", s.minimum(V("a"), V("b")), {"a": _u(3, 4), "b": _u(3, 4) + 0.05}, {}
    yield "pow", s.pow(V("a"), V("b")), {"a": _u(3, 4, lo=0.5, hi=2), "b": _u(3, 4)}, {}
    yield "hypot", s.hypot(V("a"), V("b")), {"a": _u(3, 4, lo=0.5), "b": _u(3, 4, lo=0.5)}, {}
    yield "UpSampling-nearest", s.UpSampling(V("x"), scale=2, sample_type="nearest", num_args=1), \
        {"x": _u(1, 2, 3, 3)}, {}
    yield "UpSampling-bilinear", s.UpSampling(V("x"), V("w"), scale=2, sample_type="bilinear", num_filter=2,
                                              num_args=2), \
        {"x": _u(1, 2, 3, 3), "w": _u(2, 1, 4, 4)}, {}
    yield "InstanceNorm", s.InstanceNorm(V("x"), V("g"), V("b")), \
        {"x": _u(2, 3, 4), "g": _u(3, lo=0.5), "b": _u(3)}, {}
    yield "GroupNorm", s.GroupNorm(V("x"), V("g"), V("b"), num_groups=2), \
        {"x": _u(2, 4, 3), "g": _u(2, lo=0.5), "b": _u(2)}, {}  # gamma/beta: one per group
    for mode in ("instance", "channel", "spatial"):
        yield f"L2Normalization-{mode}", s.L2Normalization(V("x"), mode=mode), {"x": _u(2, 3, 4)}, {}
    yield "softmin", s.softmin(V("x"), axis=-1), {"x": _u(3, 5)}, {}
    yield "softmax_cross_entropy", s.softmax_cross_entropy(V("x"), V("y")), \
        {"x": _u(3, 5), "y": np.array([0.0, 3, 4])}, {"grad_nodes": ["x"]}
    yield "ctc_loss", s.ctc_loss(V("x"), V("y")), \
        {"x": _u(5, 2, 4), "y": np.array([[1.0, 2], [3, 0]])}, {"grad_nodes": ["x"]}
    yield "ROIPooling", s.ROIPooling(V("x"), V("r"), pooled_size=(2, 2), spatial_scale=1.0), \
        {"x": R.permutation(2 * 6 * 6).reshape(1, 2, 6, 6) / 10.0, "r": np.array([[0.0, 0, 0, 4, 4]])}, \
        {"grad_nodes": ["x"]}
    yield "Correlation", s.Correlation(V("a"), V("b"), kernel_size=1, max_displacement=1, stride1=1, stride2=1,
                                       pad_size=1), {"a": _u(1, 2, 4, 4), "b": _u(1, 2, 4, 4)}, {}
    yield "GridGenerator-affine", s.GridGenerator(V("t"), transform_type="affine", target_shape=(3, 4)), \
        {"t": _u(2, 6)}, {}
    yield "GridGenerator-warp", s.GridGenerator(V("f"), transform_type="warp"), {"f": _u(1, 2, 3, 4)}, {}
    yield "BilinearSampler", s.BilinearSampler(V("x"), V("g")), \
        {"x": _u(1, 2, 4, 4), "g": _u(1, 2, 3, 3, lo=-0.7, hi=0.7)}, {"numeric_eps": 1e-5}
    yield "SpatialTransformer", s.SpatialTransformer(V("x"), V("loc"), target_shape=(3, 3),
                                                     transform_type="affine", sampler_type="bilinear"), \
        {"x": _u(1, 2, 4, 4), "loc": np.array([[0.8, 0.1, 0.05, -0.1, 0.7, 0.02]])}, {"numeric_eps": 1e-5}
    yield "split_v2", s.split_v2(V("x"), indices_or_sections=(1, 3), axis=1)[1], {"x": _u(2, 5)}, {}
    yield "im2col", s.im2col(V("x"), kernel=(2, 2), stride=(1, 1), pad=(1, 1)), {"x": _u(1, 2, 3, 3)}, {}
    yield "col2im", s.col2im(V("c"), output_size=(3, 3), kernel=(2, 2)), {"c": _u(1, 8, 4)}, {}
    yield "_square_sum", s._internal._square_sum(V("x"), axis=1), {"x": _u(3, 4)}, {}
    yield "choose_element_0index", s.choose_element_0index(V("a"), V("i")), \
        {"a": _u(3, 4), "i": np.array([1.0, 0, 3])}, {"grad_nodes": ["a"]}
    # syevd's gradient (as MXNet's) is the symmetric one: differentiate through a symmetric input
    a = V("a")
    a_sym = a + s.transpose(a)
    yield "linalg.syevd-U", s.linalg.syevd(a_sym)[0], {"a": np.diag([0.5, 1.0, 2.0]) + 0.05 * _spd(3) / 3}, {}
    yield "linalg.syevd-L", s.linalg.syevd(a_sym)[1], {"a": np.diag([0.5, 1.0, 2.0]) + 0.05 * _spd(3) / 3}, {}
    yield "linalg.gelqf", s.linalg.gelqf(V("a"))[1], {"a": _u(2, 3) + np.eye(2, 3)}, {}
    yield "linalg.extracttrian", s.linalg.extracttrian(V("a"), offset=-1), {"a": _u(3, 3)}, {}
    yield "linalg.maketrian", s.linalg.maketrian(V("a"), offset=1), {"a": _u(3)}, {}
    yield "linalg.inverse", s.linalg.inverse(V("a")), {"a": _spd(3)}, {}
    yield "linalg.det", s.linalg.det(V("a")), {"a": _spd(3) / 3}, {}
    yield "linalg.slogdet", s.linalg.slogdet(V("a"))[1], {"a": _spd(3) / 3}, {}
    yield "linalg.gemm-axis", s.linalg.gemm(V("a"), V("b"), V("c"), axis=0, alpha=0.5, beta=2.0), \
        {"a": _u(2, 5, 3), "b": _u(3, 5, 4), "c": _u(2, 5, 4)}, {}  # rows on axis 0, batch on axis 1
    yield "image.normalize", s.image.normalize(V("x"), mean=(0.1, 0.2, 0.3), std=(0.5, 2.0, 1.0)), {"x": _u(3, 2, 3)}, {}
    yield "contrib.BilinearResize2D", s.contrib.BilinearResize2D(V("x"), height=5, width=3), \
        {"x": _u(1, 2, 3, 4)}, {}
    yield "contrib.AdaptiveAvgPooling2D", s.contrib.AdaptiveAvgPooling2D(V("x"), output_size=(2, 3)), \
        {"x": _u(1, 2, 5, 4)}, {}
    yield "contrib.SyncBatchNorm", s.contrib.SyncBatchNorm(V("x"), V("g"), V("b"), V("mm"), V("mv"),
                                                           fix_gamma=False, key="k"), \
        {"x": _u(4, 3, 2), "g": _u(3, lo=0.5), "b": _u(3)}, \
        {"grad_nodes": ["x", "g", "b"], "aux_states": {"mm": np.zeros(3), "mv": np.ones(3)}}
    yield "contrib.index_copy", s.contrib.index_copy(V("o"), V("i"), V("n")), \
        {"o": _u(4, 3), "i": np.array([2.0, 0]), "n": _u(2, 3)}, {"grad_nodes": ["o", "n"]}
    qkv = _u(3, 2, 2 * 3 * 2)
    yield "contrib.interleaved_matmul_selfatt_qk", s.contrib.interleaved_matmul_selfatt_qk(V("qkv"), heads=2), \
        {"qkv": qkv}, {}
    yield "contrib.interleaved_matmul_selfatt_valatt", \
        s.contrib.interleaved_matmul_selfatt_valatt(V("qkv"), V("att"), heads=2), \
        {"qkv": qkv, "att": _u(4, 3, 3)}, {}
    yield "contrib.interleaved_matmul_encdec_qk", s.contrib.interleaved_matmul_encdec_qk(V("q"), V("kv"), heads=2), \
        {"q": _u(3, 2, 4), "kv": _u(4, 2, 8)}, {}
    yield "contrib.interleaved_matmul_encdec_valatt", \
        s.contrib.interleaved_matmul_encdec_valatt(V("kv"), V("att"), heads=2), \
        {"kv": _u(4, 2, 8), "att": _u(4, 3, 4)}, {}
    yield "sparse.retain", s.sparse.retain(data=V("d"), indices=V("i")), \
        {"d": _u(5, 3), "i": np.array([3.0, 0])}, {"grad_nodes": ["d"]}
    yield "random_pdf_normal", s.random_pdf_normal(V("x"), V("mu"), V("sigma")), \
        {"x": _u(2, 3), "mu": _u(2), "sigma": _u(2, lo=0.5, hi=1.5)}, {}
    yield "random_pdf_gamma", s.random_pdf_gamma(V("x"), V("alpha"), V("beta")), \
        {"x": _u(2, 3, lo=0.5, hi=2), "alpha": _u(2, lo=1, hi=2), "beta": _u(2, lo=0.5, hi=1.5)}, {}
    yield "random_pdf_dirichlet", s.random_pdf_dirichlet(V("x"), V("alpha")), \
        {"x": np.array([[[0.2, 0.3, 0.5]], [[0.6, 0.1, 0.3]]]), "alpha": _u(2, 3, lo=1, hi=2)}, \
        {"grad_nodes": ["alpha"]}
    yield "Convolution-3d", s.Convolution(V("x"), V("w"), V("b"), kernel=(2, 2, 2), num_filter=2, pad=(1, 0, 1)), \
        {"x": _u(1, 2, 3, 3, 3), "w": _u(2, 2, 2, 2, 2), "b": _u(2)}, {}
    yield "Deconvolution-3d", s.Deconvolution(V("x"), V("w"), kernel=(2, 2, 2), num_filter=2, stride=(2, 1, 1),
                                              no_bias=True), \
        {"x": _u(1, 2, 2, 2, 2), "w": _u(2, 2, 2, 2, 2)}, {}
    yield "Pooling-3d-avg", s.Pooling(V("x"), kernel=(2, 2, 2), pool_type="avg", stride=(1, 1, 1)), \
        {"x": _u(1, 1, 3, 3, 3)}, {}
    # MXNet 1.9.1 has pooling_convention='same' for 1-D max pooling only
    yield "Pooling-same-max-1d", s.Pooling(V("x"), kernel=(2,), pool_type="max", pooling_convention="same",
                                           stride=(2,)), \
        {"x": R.permutation(2 * 5).reshape(1, 2, 5) / 10.0}, {}


CASES = list(_cases())


@pytest.mark.parametrize("label,sym,location,extra", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_finite_differences(label, sym, location, extra):
    extra = dict(extra)
    check_numeric_gradient(sym, location, numeric_eps=extra.pop("numeric_eps", 1e-6), rtol=1e-4, atol=1e-6,
                           dtype=np.float64, **extra)


# -- _contrib_boolean_mask: a registry operator whose output length depends on the index values ---------
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_boolean_mask_selects_slices_and_scatters_the_gradient(axis):
    x = _u(4, 3, 5)
    keep = (R.uniform(size=x.shape[axis]) > 0.4).astype(np.float32)
    keep[0] = 1.0
    data, index = mx.nd.array(x, dtype="float64"), mx.nd.array(keep)
    data.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.boolean_mask(data, index, axis=axis)
    expected = np.compress(keep != 0, x, axis=axis)
    np.testing.assert_array_equal(y.asnumpy(), expected)
    w = R.standard_normal(expected.shape)
    y.backward(mx.nd.array(w, dtype="float64"))
    # d sum(w * y) / dx: w at the kept slices, zero at the dropped ones
    want = np.zeros_like(x)
    sl = [slice(None)] * 3
    sl[axis] = np.flatnonzero(keep)
    want[tuple(sl)] = w
    np.testing.assert_array_equal(data.grad.asnumpy(), want)


def test_boolean_mask_with_nothing_selected_and_out():
    data = mx.nd.array(_u(3, 2))
    assert mx.nd.contrib.boolean_mask(data, mx.nd.zeros(3)).shape == (0, 2)
    out = mx.nd.zeros((1, 2))
    res = mx.nd.contrib.boolean_mask(data, mx.nd.array([0, 0, 1]), out=out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), data.asnumpy()[2:])


def test_boolean_mask_is_a_symbol_with_an_unknown_length():
    from ember.base import ShapeError
    y = mx.sym.contrib.boolean_mask(mx.sym.var("d"), mx.sym.var("i"))
    assert y.name == "boolean_mask0"
    assert '"op": "_contrib_boolean_mask"' in y.tojson()
    _, out_shapes, _ = y.infer_shape_partial(d=(3, 2), i=(3,))
    assert out_shapes == [(0, 2)]  # the selected length is unknown (legacy shape semantics: 0)
    with pytest.raises(ShapeError, match="index has 2 entries but data has 3"):
        y.infer_shape_partial(d=(3, 2), i=(2,))
    with pytest.raises(ShapeError, match="index must be 1-D"):
        mx.nd.contrib.boolean_mask(mx.nd.ones((3, 2)), mx.nd.ones((3, 1)))


def test_sparse_retain_keeps_row_sparse_storage_imperatively_and_zeroes_other_rows_densely():
    x = _u(5, 3)
    rsp = mx.nd.array(x).tostype("row_sparse")
    kept = mx.nd.sparse.retain(rsp, indices=mx.nd.array([0, 3], dtype="int64"))
    assert kept.stype == "row_sparse" and kept.indices.asnumpy().tolist() == [0, 3]
    want = np.zeros_like(x)
    want[[0, 3]] = x[[0, 3]]
    np.testing.assert_allclose(kept.asnumpy(), want, rtol=1e-6)
    y = mx.sym.sparse.retain(data=mx.sym.var("d"), indices=mx.sym.var("i"))
    ex = y.simple_bind(mx.cpu(), d=(5, 3), i=(2,))
    ex.forward(d=mx.nd.array(x), i=mx.nd.array([0, 3]))
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), want, rtol=1e-6)


def test_sym_eye_is_the_eye_operator():
    y = mx.sym.eye(3, 4, k=1)
    assert y.name == "_eye0"  # as MXNet names it
    ex = y.simple_bind(mx.cpu())
    ex.forward()
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), np.eye(3, 4, k=1))


@pytest.mark.parametrize("name,forward", [("round_ste", lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5)),
                                          ("sign_ste", np.sign)])
def test_straight_through_estimators_pass_the_gradient_unchanged(name, forward):
    x = np.array([-1.5, -0.4, 0.0, 0.5, 2.5], dtype=np.float32)  # halves round away from zero, as MXNet
    w = np.arange(1.0, 6.0, dtype=np.float32)
    data = mx.nd.array(x)
    data.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd.contrib, name)(data) * mx.nd.array(w)
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), forward(x) * w)
    np.testing.assert_array_equal(data.grad.asnumpy(), w)
    inplace = mx.nd.array(x)
    getattr(mx.nd.contrib, name)(inplace, out=inplace)
    np.testing.assert_array_equal(inplace.asnumpy(), forward(x))


def _iou_reference(a, b, fmt):
    """Loop IOU of one box pair, MXNet's rules (negative width/height: area 0; empty union: 0)."""
    def corners(x):
        return x if fmt == "corner" else (x[0] - x[2] / 2, x[1] - x[3] / 2, x[0] + x[2] / 2, x[1] + x[3] / 2)

    def area(c):
        w, h = c[2] - c[0], c[3] - c[1]
        return 0.0 if w < 0 or h < 0 else w * h
    ca, cb = corners(a), corners(b)
    inter = max(min(ca[2], cb[2]) - max(ca[0], cb[0]), 0) * max(min(ca[3], cb[3]) - max(ca[1], cb[1]), 0)
    union = area(ca) + area(cb) - inter
    return inter / union if union > 0 else 0.0


@pytest.mark.parametrize("fmt", ["corner", "center"])
def test_box_iou_matches_a_loop_reference(fmt):
    a = R.uniform(-1, 3, size=(3, 2, 4)).astype(np.float32)
    b = R.uniform(-1, 3, size=(5, 4)).astype(np.float32)
    a[0, 0] = 0.0          # a degenerate box
    b[1] = [2, 2, 0, 0]    # negative extent (corner format)
    got = mx.nd.contrib.box_iou(mx.nd.array(a), mx.nd.array(b), format=fmt).asnumpy()
    assert got.shape == (3, 2, 5)
    want = np.array([[_iou_reference(x, y, fmt) for y in b] for x in a.reshape(-1, 4)]).reshape(3, 2, 5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    # MXNet's documented example
    doc = mx.nd.contrib.box_iou(mx.nd.array([[0.5, 0.5, 1.0, 1.0], [0.0, 0.0, 0.5, 0.5]]),
                                mx.nd.array([[0.25, 0.25, 0.75, 0.75]]))
    np.testing.assert_allclose(doc.asnumpy(), [[1 / 7], [1 / 7]], rtol=1e-5)
    y = mx.sym.contrib.box_iou(mx.sym.var("l"), mx.sym.var("r"))
    assert y.infer_shape(l=(3, 2, 4), r=(5, 4))[1] == [(3, 2, 5)]


# -- _contrib_box_nms against MXNet 1.9.1 (tests/data/make_box_nms_fixtures.py) ----------------------------
_NMS = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "box_nms", "cases.npz"))


@pytest.mark.parametrize("case", range(7))
def test_box_nms_output_and_gradient_equal_mxnets(case):
    attrs = json.loads(str(_NMS[f"attrs_{case}"]))
    data = mx.nd.array(_NMS["data"])
    data.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.box_nms(data, **attrs)
    y.backward(mx.nd.array(_NMS[f"ograd_{case}"]))
    np.testing.assert_allclose(y.asnumpy(), _NMS[f"out_{case}"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(data.grad.asnumpy(), _NMS[f"grad_{case}"], rtol=1e-6, atol=1e-7)


def test_box_nms_symbol_and_documented_example():
    y = mx.sym.contrib.box_nms(mx.sym.var("d"))
    assert y.list_outputs() == ["box_nms0_output0"]  # the index output is hidden, as MXNet
    assert y.infer_shape(d=(2, 4, 6))[1] == [(2, 4, 6)]
    x = mx.nd.array([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2],
                     [0, 0.3, 0.1, 0.1, 0.14, 0.14], [2, 0.6, 0.5, 0.5, 0.7, 0.8]])
    got = mx.nd.contrib.box_nms(x, overlap_thresh=0.1, coord_start=2, score_index=1, id_index=0,
                                force_suppress=True)
    want = [[2, 0.6, 0.5, 0.5, 0.7, 0.8], [0, 0.5, 0.1, 0.1, 0.2, 0.2], [-1] * 6, [-1] * 6]
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    assert mx.nd.contrib.box_non_maximum_suppression is not None


def _corner_boxes(*shape):
    xy = R.uniform(0, 1, size=shape + (2,))
    wh = R.uniform(0.1, 0.6, size=shape + (2,))
    return np.concatenate([xy, xy + wh], -1).astype(np.float32)


def test_box_encode_matches_the_formula_and_box_decode_inverts_it():
    anchors, refs = _corner_boxes(2, 5), _corner_boxes(2, 3)
    samples = np.array([[1, -1, 0, 1, 1], [1, 1, 0, -1, 1]], np.float32)
    matches = R.integers(0, 3, size=(2, 5)).astype(np.float32)
    means = np.array([0.1, -0.1, 0.0, 0.2], np.float32)
    stds = np.array([0.1, 0.1, 0.2, 0.2], np.float32)
    t, m = mx.nd.contrib.box_encode(*[mx.nd.array(v) for v in (samples, matches, anchors, refs, means, stds)])
    ref = refs[np.arange(2)[:, None], matches.astype(int)]

    def center(b):
        return (b[..., 0] + b[..., 2]) / 2, (b[..., 1] + b[..., 3]) / 2, b[..., 2] - b[..., 0], b[..., 3] - b[..., 1]
    ax, ay, aw, ah = center(anchors)
    rx, ry, rw, rh = center(ref)
    want = (np.stack([(rx - ax) / aw, (ry - ay) / ah, np.log(rw / aw), np.log(rh / ah)], -1) - means) / stds
    pos = (samples > 0.5)[..., None]
    np.testing.assert_allclose(t.asnumpy(), np.where(pos, want, 0), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(m.asnumpy(), np.broadcast_to(pos, want.shape).astype(np.float32))
    # decode(encode(x)) gives the matched reference boxes back (targets de-normalized by means first)
    for b in range(2):
        offsets = t.asnumpy()[b:b + 1] + means / stds
        got = mx.nd.contrib.box_decode(mx.nd.array(offsets), mx.nd.array(anchors[b:b + 1]), std0=0.1, std1=0.1,
                                       std2=0.2, std3=0.2, format="corner").asnumpy()[0]
        keep = samples[b] > 0.5
        np.testing.assert_allclose(got[keep], ref[b][keep], rtol=1e-4, atol=1e-5)
    centered = np.stack(center(anchors[:1]), -1)
    a = mx.nd.contrib.box_decode(mx.nd.zeros((1, 5, 4)), mx.nd.array(centered))  # center format
    np.testing.assert_allclose(a.asnumpy(), anchors[:1], rtol=1e-5, atol=1e-6)
    big = mx.nd.contrib.box_decode(mx.nd.array(np.full((1, 5, 4), 3.0, np.float32)), mx.nd.array(centered), clip=0.5)
    width = big.asnumpy()[0, :, 2] - big.asnumpy()[0, :, 0]
    np.testing.assert_allclose(width, np.exp(0.5) * centered[0, :, 2], rtol=1e-5)  # log-size clipped


# (attributes, MXNet 1.9.1's row matches, column matches) on the score matrix of MXNet's documentation
_BIPARTITE = [
    (dict(threshold=1e-12), [1, -1, 0], [2, 0]),
    (dict(threshold=0.35), [1, -1, -1], [-1, 0]),
    (dict(threshold=0.0, topk=1), [1, -1, 0], [2, 0]),   # MXNet stops after topk + 1 matches
    (dict(threshold=0.15, is_ascend=True), [-1, 0, -1], [1, -1]),
    (dict(threshold=0.5), [1, -1, -1], [-1, 0]),          # 0.5 itself is not beyond the threshold
]


@pytest.mark.parametrize("attrs,rows,cols", _BIPARTITE)
def test_bipartite_matching_equals_mxnets(attrs, rows, cols):
    s = mx.nd.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]])
    x, y = mx.nd.contrib.bipartite_matching(s, **attrs)
    np.testing.assert_array_equal(x.asnumpy(), rows)
    np.testing.assert_array_equal(y.asnumpy(), cols)


def test_bipartite_matching_is_a_consistent_greedy_matching_per_batch():
    scores = R.permutation(2 * 3 * 7 * 5).reshape(2, 3, 7, 5).astype(np.float32) / 210
    x, y = mx.nd.contrib.bipartite_matching(mx.nd.array(scores), threshold=0.4)
    assert x.shape == (2, 3, 7) and y.shape == (2, 3, 5)
    for b in range(6):
        s, r, c = scores.reshape(6, 7, 5)[b], x.asnumpy().reshape(6, 7)[b], y.asnumpy().reshape(6, 5)[b]
        for i, j in enumerate(r.astype(int)):
            if j >= 0:
                assert c[j] == i and s[i, j] > 0.4
        i, j = np.unravel_index(np.argmax(s), s.shape)
        assert r[i] == j  # the best pair is always matched first


def test_multibox_prior_anchors():
    got = mx.nd.contrib.MultiBoxPrior(mx.nd.zeros((1, 3, 2, 3)), sizes=(0.5, 0.25), ratios=(1, 2)).asnumpy()
    assert got.shape == (1, 2 * 3 * 3, 4)
    # recorded from MXNet 1.9.1: the first cell's three boxes (sizes 0.5, 0.25 at ratio 1; size 0.5 at ratio 2)
    np.testing.assert_allclose(got[0, :3], [[0.0, 0.0, 1 / 3, 0.5], [1 / 12, 0.125, 0.25, 0.375],
                                            [-0.06903559, 0.07322331, 0.40236893, 0.4267767]], rtol=1e-5, atol=1e-6)
    boxes = got[0].reshape(2, 3, 3, 4)
    centers = (boxes[..., :2] + boxes[..., 2:]) / 2
    np.testing.assert_allclose(centers[..., 0], np.broadcast_to(((np.arange(3) + 0.5) / 3)[None, :, None],
                                                                 (2, 3, 3)), rtol=1e-5)
    np.testing.assert_allclose(centers[..., 1], np.broadcast_to(((np.arange(2) + 0.5) / 2)[:, None, None],
                                                                 (2, 3, 3)), rtol=1e-5)
    clipped = mx.nd.contrib.MultiBoxPrior(mx.nd.zeros((1, 1, 2, 3)), sizes=(0.5,), ratios=(1, 2), clip=True)
    assert clipped.asnumpy().min() >= 0.0 and clipped.asnumpy().max() <= 1.0
    y = mx.sym.contrib.MultiBoxPrior(mx.sym.var("d"), sizes=(0.5, 0.25), ratios=(1, 2, 3))
    assert y.infer_shape(d=(1, 3, 4, 5))[1] == [(1, 80, 4)]


_MBD = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "multibox", "detection.npz"))


@pytest.mark.parametrize("case", range(6))
def test_multibox_detection_equals_mxnets(case):
    attrs = json.loads(str(_MBD[f"attrs_{case}"]))
    got = mx.nd.contrib.MultiBoxDetection(mx.nd.array(_MBD["cls_prob"]), mx.nd.array(_MBD["loc_pred"]),
                                          mx.nd.array(_MBD["anchor"]), **attrs)
    np.testing.assert_allclose(got.asnumpy(), _MBD[f"out_{case}"], rtol=1e-5, atol=1e-6)
    y = mx.sym.contrib.MultiBoxDetection(mx.sym.var("c"), mx.sym.var("l"), mx.sym.var("a"))
    assert y.infer_shape(c=(2, 4, 30))[1] == [(2, 30, 6)]


_MBT = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "multibox", "target.npz"))


@pytest.mark.parametrize("case", range(5))
def test_multibox_target_equals_mxnets(case):
    attrs = json.loads(str(_MBT[f"attrs_{case}"]))
    loc, mask, cls = mx.nd.contrib.MultiBoxTarget(mx.nd.array(_MBT["anchor"]), mx.nd.array(_MBT["label"]),
                                                  mx.nd.array(_MBT["cls_pred"]), **attrs)
    np.testing.assert_allclose(loc.asnumpy(), _MBT[f"loc_target_{case}"], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(mask.asnumpy(), _MBT[f"loc_mask_{case}"])
    np.testing.assert_array_equal(cls.asnumpy(), _MBT[f"cls_target_{case}"])


def test_box_nms_drops_the_background_class_including_the_default_minus_one():
    boxes = mx.nd.array([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [0, 0.4, 0.1, 0.1, 0.2, 0.2],
                         [1, 0.3, 0.1, 0.1, 0.14, 0.14], [-1, 0.6, 0.5, 0.5, 0.7, 0.8]])
    got = mx.nd.contrib.box_nms(boxes, id_index=0, force_suppress=True)  # background_id -1: the last box goes
    np.testing.assert_allclose(got.asnumpy(), [[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.3, 0.1, 0.1, 0.14, 0.14],
                                               [-1] * 6, [-1] * 6], rtol=1e-6)
    got = mx.nd.contrib.box_nms(boxes, id_index=0, force_suppress=True, background_id=0)
    np.testing.assert_allclose(got.asnumpy(), [[-1, 0.6, 0.5, 0.5, 0.7, 0.8], [1, 0.3, 0.1, 0.1, 0.14, 0.14],
                                               [-1] * 6, [-1] * 6], rtol=1e-6)
