"""CTCLoss: against a brute-force sum over every alignment, finite differences and MXNet 1.9.1's numbers."""
import itertools
import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import check_grad, grads, run  # noqa: E402

import ember as mx  # noqa: E402
from ember import ops  # noqa: E402
from ember.base import MXNetError, OperatorError, ShapeError  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "data", "loss", "ctc_op.npz")


# -- the brute-force reference -------------------------------------------------------------------
def collapse(path, blank):
    """CTC's many-to-one map: merge repeated classes, then drop blanks."""
    merged = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
    return [k for k in merged if k != blank]


def alignment_sum(p, label, blank):
    """Sum over every length-T path over p's classes that collapses to `label` of prod p[t, path_t]."""
    T, C = p.shape
    total = 0.0
    for path in itertools.product(range(C), repeat=T):
        if collapse(path, blank) == list(label):
            total += np.prod(p[np.arange(T), list(path)])
    return total


def brute_force_nll(x, label, blank):
    """-log of the alignment sum of softmax(x) (x: (T, C) activations)."""
    p = np.exp(x - x.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    total = alignment_sum(p, label, blank)
    return -np.log(total) if total > 0 else np.inf


def reference(data, label, blank_label="first", data_lengths=None, label_lengths=None):
    """Per-sequence brute-force losses with MXNet's label conventions and its infeasible -> 0 rule."""
    T, N, C = data.shape
    blank = 0 if blank_label == "first" else C - 1
    pad = 0 if blank_label == "first" else -1
    out = []
    for b in range(N):
        frames = T if data_lengths is None else int(data_lengths[b])
        row = [int(v) for v in label[b]]
        if label_lengths is not None:
            row = row[:int(label_lengths[b])]
        elif pad in row:
            row = row[:row.index(pad)]
        repeats = sum(1 for i in range(1, len(row)) if row[i] == row[i - 1])
        if len(row) + repeats > frames:
            out.append(0.0)  # MXNet (warp-ctc): loss 0 when the labels cannot fit in the frames
        else:
            out.append(brute_force_nll(data[:frames, b], row, blank))
    return np.array(out)


rng = np.random.default_rng(11)

CASES = [
    # (name, T, N, C, label, attrs, data_lengths, label_lengths)
    ("first", 5, 3, 4, [[1, 2, 0], [3, 3, 0], [2, 0, 0]], {}, None, None),
    ("last", 5, 3, 4, [[0, 1, -1], [2, 2, -1], [1, 0, 2]], {"blank_label": "last"}, None, None),
    ("repeat_needs_blank", 4, 2, 3, [[1, 1], [2, 2]], {}, None, None),
    ("empty_label", 4, 2, 3, [[0, 0], [1, 0]], {}, None, None),
    ("label_lengths", 5, 2, 4, [[3, 1, 2], [2, 2, 3]], {"use_label_lengths": True}, None, [1, 2]),
    ("data_lengths", 5, 3, 4, [[1, 2, 0], [3, 0, 0], [1, 1, 0]],
     {"use_data_lengths": True}, [3, 5, 4], None),
    ("both_last", 6, 2, 3, [[0, 1, 1], [1, 0, 1]],
     {"use_data_lengths": True, "use_label_lengths": True, "blank_label": "last"}, [6, 4], [3, 2]),
    ("infeasible", 4, 2, 4, [[1, 1, 2], [2, 3, 0]], {"use_data_lengths": True}, [3, 4], None),
]


def _inputs(T, N, C, label, data_lengths, label_lengths, dtype=np.float64):
    ins = [rng.standard_normal((T, N, C)).astype(dtype), np.array(label, dtype=np.float32)]
    if data_lengths is not None:
        ins.append(np.array(data_lengths, dtype=np.float32))
    if label_lengths is not None:
        ins.append(np.array(label_lengths, dtype=np.float32))
    return ins


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_forward_equals_brute_force(case):
    _, T, N, C, label, attrs, dl, ll = case
    ins = _inputs(T, N, C, label, dl, ll)
    got = run("CTCLoss", ins, attrs)
    want = reference(ins[0], ins[1], attrs.get("blank_label", "first"), dl, ll)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradient_equals_finite_differences(case):
    _, T, N, C, label, attrs, dl, ll = case
    ins = _inputs(T, N, C, label, dl, ll)
    g = check_grad("CTCLoss", ins, attrs, wrt=[0], rtol=1e-6, atol=1e-8)
    assert all(x is None for x in g[1:])  # labels and lengths get no gradient
    if dl is not None:  # frames beyond a sequence's length get exactly 0
        for b, n in enumerate(dl):
            assert not np.any(g[0][n:, b])


def test_frames_beyond_data_lengths_are_never_read():
    """Padding frames may hold anything, NaN included: the loss and the other gradients are unchanged."""
    ins = _inputs(6, 2, 4, [[1, 2, 0], [3, 3, 0]], [4, 6], None)
    attrs = {"use_data_lengths": True}
    padded = [x.copy() for x in ins]
    padded[0][4:, 0] = np.nan
    np.testing.assert_allclose(run("CTCLoss", padded, attrs), run("CTCLoss", ins, attrs), rtol=1e-12)
    g_pad = grads("CTCLoss", padded, attrs, [np.ones(2)])[0]
    g = grads("CTCLoss", ins, attrs, [np.ones(2)])[0]
    assert not np.isnan(g_pad).any()
    np.testing.assert_array_equal(g_pad[4:, 0], 0)
    np.testing.assert_allclose(g_pad, g, rtol=1e-12, atol=1e-15)


def test_many_classes():
    """6000 classes: the loss still equals the alignment sum, labels far apart in the alphabet."""
    T, N, C = 6, 2, 6000
    x = rng.standard_normal((T, N, C)) * 3
    label = np.array([[100, 2000, 5999, 0], [1000, 1000, 4000, 0]])
    got = run("CTCLoss", [x, label], {})
    p = np.exp(x - np.log(np.exp(x).sum(axis=2, keepdims=True)))
    for b in range(N):
        # paths through classes outside the label never collapse to it: sum over the blank and the used ones
        used = [0] + sorted(set(label[b, :3].tolist()))
        relabel = [used.index(k) for k in label[b, :3]]
        want = -np.log(alignment_sum(p[:, b, used], relabel, 0))
        np.testing.assert_allclose(got[b], want, rtol=1e-9)


def test_gradient_is_softmax_minus_occupancy():
    """Summed over the classes the gradient of each live frame is 0 (softmax and occupancy both sum to 1)."""
    ins = _inputs(6, 2, 5, [[1, 2, 3], [4, 4, 0]], None, None)
    g = grads("CTCLoss", ins, {}, [np.ones(2)])[0]
    np.testing.assert_allclose(g.sum(axis=2), 0, atol=1e-12)


def test_float32_and_float64():
    ins = _inputs(5, 2, 4, [[1, 2], [3, 0]], None, None, dtype=np.float32)
    out32 = run("CTCLoss", ins, {})
    assert out32.dtype == np.float32
    want = reference(ins[0].astype(np.float64), ins[1])
    np.testing.assert_allclose(out32, want, rtol=1e-6)
    assert run("CTCLoss", [ins[0].astype(np.float64), ins[1]], {}).dtype == np.float64


def test_uniform_activations_match_mxnet_documented_values():
    # MXNet's own test: all-ones activations, 4 classes, blank last, 20 frames
    out = mx.nd.CTCLoss(mx.nd.ones((20, 2, 4)), mx.nd.array([[1, 0, -1, -1], [2, 1, 1, -1]]), blank_label="last")
    np.testing.assert_allclose(out.asnumpy(), [18.82820702, 16.50581741], rtol=1e-6)


# -- MXNet 1.9.1's numbers -----------------------------------------------------------------------
def _fixture_cases():
    if not os.path.exists(FIXTURES):
        return []
    d = np.load(FIXTURES)
    return sorted({k.split("/")[0] for k in d.files})


@pytest.mark.parametrize("name", _fixture_cases())
def test_matches_mxnet(name):
    d = np.load(FIXTURES)
    attrs = json.loads(str(d[f"{name}/attrs"]))
    ins = [mx.nd.array(d[f"{name}/in_{k}"]) for k in range(4) if f"{name}/in_{k}" in d.files]
    ins[0].attach_grad()
    with mx.autograd.record():
        y = mx.nd.CTCLoss(*ins, **attrs)
    y.backward(mx.nd.array(d[f"{name}/head"]))
    np.testing.assert_allclose(y.asnumpy(), d[f"{name}/out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ins[0].grad.asnumpy(), d[f"{name}/grad"], rtol=1e-4, atol=1e-5)


def test_fixtures_present():
    assert len(_fixture_cases()) >= 6, f"missing MXNet fixtures {FIXTURES}"


# -- names, symbols, autograd ------------------------------------------------------------------
def test_aliases_and_namespaces():
    for name in ("CTCLoss", "ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"):
        assert ops.get(name).name == "CTCLoss"
    x, lab = mx.nd.array(rng.standard_normal((5, 2, 4))), mx.nd.array([[1, 2], [3, 0]])
    want = mx.nd.CTCLoss(x, lab).asnumpy()
    for fn in (mx.nd.ctc_loss, mx.nd.contrib.CTCLoss, mx.nd.contrib.ctc_loss):
        np.testing.assert_allclose(fn(x, lab).asnumpy(), want)


def test_symbolic_inference_and_executor():
    d, lab, dl = mx.sym.var("d"), mx.sym.var("l"), mx.sym.var("dl")
    s = mx.sym.CTCLoss(d, lab, dl, use_data_lengths=True, blank_label="last", name="ctc")
    assert s.list_arguments() == ["d", "l", "dl"]
    assert s.list_outputs() == ["ctc_output0"]  # MXNet's name (its op has a hidden second output)
    arg, out, _ = s.infer_shape(d=(6, 2, 5), l=(2, 3))
    assert arg == [(6, 2, 5), (2, 3), (2,)] and out == [(2,)]
    _, out_t, _ = s.infer_type(d=np.float32)
    assert out_t == [np.float32]
    x = rng.standard_normal((6, 2, 5)).astype(np.float32)
    labels = np.array([[0, 3, -1], [1, 2, 2]], np.float32)
    lens = np.array([4, 6], np.float32)
    ex = s.simple_bind(mx.cpu(), d=(6, 2, 5), l=(2, 3), dl=(2,), grad_req={"d": "write", "l": "null", "dl": "null"})
    ex.arg_dict["d"][:] = x
    ex.arg_dict["l"][:] = labels
    ex.arg_dict["dl"][:] = lens
    head = np.array([0.5, 2.0], np.float32)
    out_sym = ex.forward(is_train=True)[0].asnumpy()
    ex.backward(mx.nd.array(head))
    xn = mx.nd.array(x)
    xn.attach_grad()
    with mx.autograd.record():
        y = mx.nd.CTCLoss(xn, mx.nd.array(labels), mx.nd.array(lens), use_data_lengths=True, blank_label="last")
    y.backward(mx.nd.array(head))
    np.testing.assert_allclose(out_sym, y.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(ex.grad_dict["d"].asnumpy(), xn.grad.asnumpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out_sym, reference(x.astype(np.float64), labels, "last", lens), rtol=1e-5)


def test_json_round_trip_keeps_attributes():
    s = mx.sym.CTCLoss(mx.sym.var("d"), mx.sym.var("l"), mx.sym.var("ll"), use_label_lengths=True,
                       blank_label="last")
    back = mx.sym.load_json(s.tojson())
    assert back.list_arguments() == ["d", "l", "ll"]
    assert back.infer_shape(d=(4, 3, 5), l=(3, 2))[1] == [(3,)]


# -- errors ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes,attrs,message", [
    ([(5, 2), (2, 3)], {}, "number of dimensions of the data array must be 3"),
    ([(5, 2, 4), (2, 3, 1)], {}, "number of dimensions of the labels array must be 2"),
    ([(5, 2, 4), (3, 3)], {}, "batch size for the labels and data arrays must be the same"),
    ([(3, 2, 4), (2, 4)], {}, "max number of labels cannot exceed the maximum sequence length"),
    ([(5, 2, 4), (2, 3), (3,)], {"use_data_lengths": True}, "batch size for the data and data lengths"),
    ([(5, 2, 4), (2, 3), (2, 1)], {"use_label_lengths": True}, "label lengths array must be a vector"),
])
def test_shape_errors(shapes, attrs, message):
    with pytest.raises(ShapeError, match=message):
        ops.get("CTCLoss").shapes(ops.get("CTCLoss").parse_attrs(attrs), shapes)
    with pytest.raises(MXNetError, match=message):
        mx.nd.CTCLoss(*[mx.nd.zeros(s) for s in shapes], **attrs).asnumpy()


def test_value_errors():
    x = mx.nd.zeros((4, 1, 3))
    with pytest.raises(OperatorError, match="outside the alphabet"):
        mx.nd.CTCLoss(x, mx.nd.array([[1, 5]])).asnumpy()
    with pytest.raises(OperatorError, match="data_lengths must be in"):
        mx.nd.CTCLoss(x, mx.nd.array([[1, 2]]), mx.nd.array([5]), use_data_lengths=True).asnumpy()
    with pytest.raises(OperatorError, match="label_lengths must be in"):
        mx.nd.CTCLoss(x, mx.nd.array([[1, 2]]), mx.nd.array([3]), use_label_lengths=True).asnumpy()
    with pytest.raises(OperatorError, match="blank_label"):
        mx.nd.CTCLoss(x, mx.nd.array([[1, 2]]), blank_label="middle")
    with pytest.raises(OperatorError, match="floating point"):
        mx.nd.CTCLoss(mx.nd.zeros((4, 1, 3), dtype="int32"), mx.nd.array([[1, 2]]))
