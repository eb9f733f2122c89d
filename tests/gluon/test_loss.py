"""gluon.loss: every loss against numpy references and MXNet 1.9.1's numbers, imperative and hybridized;
gradients through autograd against finite differences; weighting, batch_axis, symbols and errors."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import ember as mx
from ember import autograd, gluon
from ember.base import MXNetError, ShapeError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "data", "loss", "gluon_losses.npz")
MODES = pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
rng = np.random.default_rng(1203)


def nd(x, dtype=np.float32):
    return None if x is None else mx.nd.array(np.asarray(x), dtype=dtype)


def evaluate(loss, inputs, hybridize=False, dtype=np.float32):
    """loss(*inputs) as numpy, the block hybridized or not (None inputs stay None)."""
    if hybridize:
        loss.hybridize()
    return loss(*[nd(x, dtype) for x in inputs]).asnumpy()


# -- numpy references (written from the formulas, not from ember's code) ---------------------------
def per_sample_mean(loss, batch_axis=0):
    loss = np.moveaxis(loss, batch_axis, 0)
    return loss.reshape(loss.shape[0], -1).mean(axis=1)


def log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def softplus(x):
    return np.logaddexp(0, x)


def ref_l1(pred, label, sw=None, weight=None):
    loss = np.abs(label.reshape(pred.shape) - pred)
    loss = loss * (1 if sw is None else sw) * (1 if weight is None else weight)
    return per_sample_mean(loss)


def ref_l2(pred, label, sw=None, weight=1.0, batch_axis=0):
    loss = 0.5 * weight * (label.reshape(pred.shape) - pred) ** 2 * (1 if sw is None else sw)
    return per_sample_mean(loss, batch_axis)


def ref_softmax_ce(pred, label, sw=None, axis=-1, sparse=True, from_logits=False):
    logp = pred if from_logits else log_softmax(pred, axis)
    if sparse:
        idx = np.expand_dims(label.astype(np.int64), axis)
        loss = -np.take_along_axis(logp, idx, axis=axis)
    else:
        loss = -(logp * label.reshape(pred.shape)).sum(axis=axis, keepdims=True)
    return per_sample_mean(loss * (1 if sw is None else sw))


def ref_bce(pred, label, sw=None, pos_weight=None, from_sigmoid=False):
    prob = pred if from_sigmoid else 1 / (1 + np.exp(-pred))
    pw = 1 if pos_weight is None else pos_weight
    if from_sigmoid:
        loss = -(np.log(prob + 1e-12) * label * pw + np.log(1 - prob + 1e-12) * (1 - label))
    else:  # log(sigmoid(x)) = -softplus(-x), log(1 - sigmoid(x)) = -softplus(x)
        loss = label * pw * softplus(-pred) + (1 - label) * softplus(pred)
    return per_sample_mean(loss * (1 if sw is None else sw))


def ref_kl(pred, label, from_logits=True, axis=-1):
    logp = pred if from_logits else log_softmax(pred, axis)
    loss = label * (np.log(label + 1e-12) - logp)
    return loss.reshape(loss.shape[0], -1).sum(axis=1)


def ref_huber(pred, label, rho=1.0):
    err = np.abs(label - pred)
    return per_sample_mean(np.where(err > rho, err - rho / 2, err ** 2 / (2 * rho)))


def ref_hinge(pred, label, margin=1.0, squared=False):
    loss = np.maximum(0, margin - pred * label)
    return per_sample_mean(loss ** 2 if squared else loss)


def ref_logistic(pred, label, signed=True):
    z = (label + 1) / 2 if signed else label
    return per_sample_mean(z * softplus(-pred) + (1 - z) * softplus(pred))


def ref_triplet(pred, pos, neg, margin=1.0):
    d = ((pos - pred) ** 2 - (neg - pred) ** 2).reshape(pred.shape[0], -1).sum(axis=1)
    return np.maximum(d + margin, 0)


def ref_poisson(pred, target, from_logits=True, full=False):
    loss = np.exp(pred) - target * pred if from_logits else pred - target * np.log(pred + 1e-8)
    if full:
        with np.errstate(divide="ignore", invalid="ignore"):
            stirling = target * np.log(target) - target + 0.5 * np.log(2 * np.pi * target)
        loss = loss + np.where(target > 1, stirling, 0)
    return np.array([loss.mean()])


def ref_cosine(a, b, label, margin=0.0):
    cos = (a * b).sum(axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    loss = np.where(label == 1, 1 - cos, np.where(label == -1, np.maximum(0, cos - margin), 0))
    return loss.reshape(-1, 1)


def ctc_nll(probs, label, blank):
    """-log p(label) of one sequence by the textbook alpha recursion, one state at a time; probs (T, C)."""
    ext = [blank]
    for k in label:
        ext += [k, blank]
    S, T = len(ext), probs.shape[0]
    alpha = np.zeros((T, S))
    alpha[0, 0] = probs[0, blank]
    if S > 1:
        alpha[0, 1] = probs[0, ext[1]]
    for t in range(1, T):
        for s in range(S):
            a = alpha[t - 1, s] + (alpha[t - 1, s - 1] if s >= 1 else 0)
            if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                a += alpha[t - 1, s - 2]
            alpha[t, s] = a * probs[t, ext[s]]
    return -np.log(alpha[T - 1, S - 1] + (alpha[T - 1, S - 2] if S > 1 else 0))


def ref_ctc(pred_ntc, label_nt, pred_lengths=None, label_lengths=None):
    p = np.exp(log_softmax(pred_ntc.astype(np.float64), axis=2))
    blank = p.shape[2] - 1
    out = []
    for b in range(p.shape[0]):
        frames = p.shape[1] if pred_lengths is None else int(pred_lengths[b])
        row = [int(v) for v in label_nt[b]]
        row = row[:int(label_lengths[b])] if label_lengths is not None else [v for v in row if v != -1]
        out.append(ctc_nll(p[b, :frames], row, blank))
    return np.array(out)


def ref_sdml(x1, x2, s=0.3):
    n = x1.shape[0]
    dist = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(axis=2)
    logp = log_softmax(-dist, axis=1)
    labels = np.where(np.eye(n) > 0, 1 - s, s / (n - 1))
    return (labels * (np.log(labels + 1e-12) - logp)).sum(axis=1)


N = 4


def _probs(*shape):
    p = np.exp(rng.standard_normal(shape))
    return p / p.sum(axis=-1, keepdims=True)


def _sign(*shape):
    return np.where(rng.random(shape) > 0.5, 1.0, -1.0)


def _binary(*shape):
    return (rng.random(shape) > 0.5).astype(np.float64)


def _r(*shape):
    return rng.standard_normal(shape)


def _u(lo, hi, *shape):
    return rng.uniform(lo, hi, shape)


_CTC_LABEL = np.array([[1, 0, -1, -1], [2, 1, 1, -1], [0, 2, 1, 3], [3, -1, -1, -1]], np.float64)

# (id, constructor, inputs, numpy reference of the inputs)
NUMPY_CASES = [
    ("l1", lambda: gluon.loss.L1Loss(), [_r(N, 3), _r(N, 3)], ref_l1),
    ("l1_label_shape", lambda: gluon.loss.L1Loss(), [_r(N, 3), _r(N * 3)], ref_l1),
    ("l1_weights", lambda: gluon.loss.L1Loss(weight=0.5), [_r(N, 3), _r(N, 3), _u(0, 1, N, 1)],
     lambda p, l, w: ref_l1(p, l, w, 0.5)),
    ("l2", lambda: gluon.loss.L2Loss(), [_r(N, 2, 3), _r(N, 2, 3)], ref_l2),
    ("l2_weight", lambda: gluon.loss.L2Loss(weight=0.25), [_r(N, 3), _r(N, 3), _u(0, 1, N, 3)],
     lambda p, l, w: ref_l2(p, l, w, 0.25)),
    ("l2_batch_axis1", lambda: gluon.loss.L2Loss(batch_axis=1), [_r(3, N), _r(3, N)],
     lambda p, l: ref_l2(p, l, batch_axis=1)),
    ("sce", lambda: gluon.loss.SoftmaxCrossEntropyLoss(), [_r(N, 5), rng.integers(0, 5, N)], ref_softmax_ce),
    ("sce_sw_weight", lambda: gluon.loss.SoftmaxCELoss(weight=2.0),
     [_r(N, 5), rng.integers(0, 5, N), _u(0, 1, N, 1)], lambda p, l, w: 2.0 * ref_softmax_ce(p, l, w)),
    ("sce_axis1", lambda: gluon.loss.SoftmaxCELoss(axis=1), [_r(N, 5, 3), rng.integers(0, 5, (N, 3))],
     lambda p, l: ref_softmax_ce(p, l, axis=1)),
    ("sce_dense", lambda: gluon.loss.SoftmaxCELoss(sparse_label=False), [_r(N, 5), _probs(N, 5)],
     lambda p, l: ref_softmax_ce(p, l, sparse=False)),
    ("sce_from_logits", lambda: gluon.loss.SoftmaxCELoss(from_logits=True),
     [np.log(_probs(N, 5)), rng.integers(0, 5, N)], lambda p, l: ref_softmax_ce(p, l, from_logits=True)),
    ("bce", lambda: gluon.loss.SigmoidBinaryCrossEntropyLoss(), [3 * _r(N, 3), _binary(N, 3)], ref_bce),
    ("bce_soft_label", lambda: gluon.loss.SigmoidBCELoss(), [3 * _r(N, 3), _u(0, 1, N, 3)], ref_bce),
    ("bce_pos_weight", lambda: gluon.loss.SigmoidBCELoss(),
     [3 * _r(N, 3), _binary(N, 3), None, _u(0.5, 3, 1, 3)], lambda p, l, _, pw: ref_bce(p, l, pos_weight=pw)),
    ("bce_from_sigmoid", lambda: gluon.loss.SigmoidBCELoss(from_sigmoid=True),
     [_u(0.05, 0.95, N, 3), _binary(N, 3), _u(0, 1, N, 1)], lambda p, l, w: ref_bce(p, l, w, from_sigmoid=True)),
    ("bce_from_sigmoid_pw", lambda: gluon.loss.SigmoidBCELoss(from_sigmoid=True),
     [_u(0.05, 0.95, N, 3), _binary(N, 3), None, _u(0.5, 3, 1, 3)],
     lambda p, l, _, pw: ref_bce(p, l, pos_weight=pw, from_sigmoid=True)),
    ("kl", lambda: gluon.loss.KLDivLoss(), [np.log(_probs(N, 5)), _probs(N, 5)], ref_kl),
    ("kl_softmax", lambda: gluon.loss.KLDivLoss(from_logits=False, axis=1), [_r(N, 5, 2), _probs(N, 5, 2)],
     lambda p, l: ref_kl(p, l, from_logits=False, axis=1)),
    ("huber", lambda: gluon.loss.HuberLoss(), [2 * _r(N, 3), _r(N, 3)], ref_huber),
    ("huber_rho", lambda: gluon.loss.HuberLoss(rho=0.3), [2 * _r(N, 3), _r(N, 3)],
     lambda p, l: ref_huber(p, l, 0.3)),
    ("hinge", lambda: gluon.loss.HingeLoss(), [_r(N, 3), _sign(N, 3)], ref_hinge),
    ("hinge_margin", lambda: gluon.loss.HingeLoss(margin=2), [_r(N, 3), _sign(N, 3)],
     lambda p, l: ref_hinge(p, l, 2.0)),
    ("sq_hinge", lambda: gluon.loss.SquaredHingeLoss(), [_r(N, 3), _sign(N, 3)],
     lambda p, l: ref_hinge(p, l, squared=True)),
    ("logistic_signed", lambda: gluon.loss.LogisticLoss(), [3 * _r(N, 3), _sign(N, 3)], ref_logistic),
    ("logistic_binary", lambda: gluon.loss.LogisticLoss(label_format="binary"), [3 * _r(N, 3), _binary(N, 3)],
     lambda p, l: ref_logistic(p, l, signed=False)),
    ("triplet", lambda: gluon.loss.TripletLoss(), [_r(N, 5), _r(N, 5), _r(N, 5)], ref_triplet),
    ("triplet_margin_weight", lambda: gluon.loss.TripletLoss(margin=3, weight=0.5), [_r(N, 5), _r(N, 5), _r(N, 5)],
     lambda a, p, n: 0.5 * ref_triplet(a, p, n, 3.0)),
    ("poisson", lambda: gluon.loss.PoissonNLLLoss(), [_r(N, 3), _u(0, 4, N, 3)], ref_poisson),
    ("poisson_no_logits", lambda: gluon.loss.PoissonNLLLoss(from_logits=False), [_u(0.1, 4, N, 3), _u(0, 4, N, 3)],
     lambda p, t: ref_poisson(p, t, from_logits=False)),
    ("poisson_full", lambda: gluon.loss.PoissonNLLLoss(from_logits=False, compute_full=True),
     [_u(0.1, 4, N, 3), np.array([[0, 0.5, 1], [1.5, 2, 3], [4, 0, 2], [6, 1.2, 0.9]])],
     lambda p, t: ref_poisson(p, t, from_logits=False, full=True)),
    ("cosine", lambda: gluon.loss.CosineEmbeddingLoss(), [_r(N, 5), _r(N, 5), _sign(N)], ref_cosine),
    ("cosine_margin", lambda: gluon.loss.CosineEmbeddingLoss(margin=0.3), [_r(N, 5), _r(N, 5), _sign(N)],
     lambda a, b, l: ref_cosine(a, b, l, 0.3)),
    ("ctc", lambda: gluon.loss.CTCLoss(), [_r(N, 8, 5), _CTC_LABEL], ref_ctc),
    ("ctc_tnc", lambda: gluon.loss.CTCLoss(layout="TNC"), [_r(8, N, 5), _CTC_LABEL],
     lambda p, l: ref_ctc(p.transpose(1, 0, 2), l)),
    ("ctc_tnc_tn", lambda: gluon.loss.CTCLoss(layout="TNC", label_layout="TN"), [_r(8, N, 5), _CTC_LABEL.T],
     lambda p, l: ref_ctc(p.transpose(1, 0, 2), l.T)),
    ("ctc_lengths", lambda: gluon.loss.CTCLoss(), [_r(N, 8, 5), np.array([[1, 0, 3, 3], [2, 1, 1, 0],
                                                                           [0, 2, 1, 3], [3, 3, 3, 3]]),
                                                   np.array([8, 6, 7, 5]), np.array([2, 3, 4, 1])], ref_ctc),
    ("ctc_sample_weight", lambda: gluon.loss.CTCLoss(weight=2.0),
     [_r(N, 8, 5), _CTC_LABEL, None, None, _u(0.5, 1.5, N)],
     lambda p, l, _a, _b, w: 2.0 * w * ref_ctc(p, l)),
    ("sdml", lambda: gluon.loss.SDMLLoss(), [_r(N, 5), _r(N, 5)], ref_sdml),
    ("sdml_smoothing", lambda: gluon.loss.SDMLLoss(smoothing_parameter=0.1), [_r(N, 3), _r(N, 3)],
     lambda a, b: ref_sdml(a, b, 0.1)),
]


@MODES
@pytest.mark.parametrize("case", NUMPY_CASES, ids=[c[0] for c in NUMPY_CASES])
def test_matches_numpy(case, hybridize):
    _, make, inputs, reference = case
    got = evaluate(make(), inputs, hybridize)
    want = reference(*inputs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [c for c in NUMPY_CASES if not c[0].startswith("ctc")],
                         ids=[c[0] for c in NUMPY_CASES if not c[0].startswith("ctc")])
def test_float64(case):
    _, make, inputs, reference = case
    out = make()(*[nd(x, np.float64) for x in inputs])
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy(), reference(*inputs), rtol=1e-10, atol=1e-12)


# -- MXNet 1.9.1's numbers ---------------------------------------------------------------------------
def _fixture_names():
    if not os.path.exists(FIXTURES):
        return []
    return sorted({k.split("/")[0] for k in np.load(FIXTURES).files})


def test_fixtures_present():
    assert len(_fixture_names()) >= 30, f"missing MXNet fixtures {FIXTURES}"


@MODES
@pytest.mark.parametrize("name", _fixture_names())
def test_matches_mxnet(name, hybridize):
    d = np.load(FIXTURES)
    loss = getattr(gluon.loss, str(d[f"{name}/cls"]))(**json.loads(str(d[f"{name}/kwargs"])))
    if hybridize:
        loss.hybridize()
    inputs = [None if f"{name}/none_{k}" in d.files else mx.nd.array(d[f"{name}/in_{k}"])
              for k in range(int(d[f"{name}/nin"]))]
    grad_idx = [int(k) for k in d[f"{name}/grad_idx"]]
    for k in grad_idx:
        inputs[k].attach_grad()
    with autograd.record():
        out = loss(*inputs)
    np.testing.assert_allclose(out.asnumpy(), d[f"{name}/out"], rtol=1e-5, atol=1e-6)
    if grad_idx:
        out.backward(mx.nd.array(d[f"{name}/head"]))
    for k in grad_idx:
        np.testing.assert_allclose(inputs[k].grad.asnumpy(), d[f"{name}/grad_{k}"], rtol=1e-4, atol=1e-5,
                                   err_msg=f"{name}: gradient of input {k}")


# -- gradients through autograd against finite differences ---------------------------------------------
GRAD_CASES = [
    ("sce", lambda: gluon.loss.SoftmaxCELoss(), [_r(3, 4), rng.integers(0, 4, 3), _u(0.5, 1, 3, 1)]),
    ("sce_dense_axis0", lambda: gluon.loss.SoftmaxCELoss(axis=1, sparse_label=False), [_r(3, 4, 2), _probs(3, 4, 2)]),
    ("bce_pos_weight", lambda: gluon.loss.SigmoidBCELoss(), [_r(3, 4), _binary(3, 4), None, _u(0.5, 3, 1, 4)]),
    ("bce_from_sigmoid", lambda: gluon.loss.SigmoidBCELoss(from_sigmoid=True), [_u(0.1, 0.9, 3, 4), _u(0, 1, 3, 4)]),
    ("kl_softmax", lambda: gluon.loss.KLDivLoss(from_logits=False), [_r(3, 4), _probs(3, 4)]),
    ("huber", lambda: gluon.loss.HuberLoss(rho=0.7), [2 * _r(3, 4), _r(3, 4)]),
    ("logistic", lambda: gluon.loss.LogisticLoss(), [_r(3, 4), _sign(3, 4)]),
    ("triplet", lambda: gluon.loss.TripletLoss(margin=4), [_r(3, 4), _r(3, 4), _r(3, 4)]),
    ("poisson_full", lambda: gluon.loss.PoissonNLLLoss(from_logits=False, compute_full=True),
     [_u(0.5, 3, 3, 4), _u(0, 4, 3, 4)]),
    ("cosine", lambda: gluon.loss.CosineEmbeddingLoss(margin=-0.5), [_r(3, 4), _r(3, 4), _sign(3)]),
    ("ctc", lambda: gluon.loss.CTCLoss(), [_r(2, 6, 4), np.array([[0, 1, 1], [2, -1, -1]])]),
    ("sdml", lambda: gluon.loss.SDMLLoss(), [_r(3, 4), _r(3, 4)]),
]


@MODES
@pytest.mark.parametrize("case", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradient_finite_differences(case, hybridize):
    _, make, inputs = case
    loss = make()
    if hybridize:
        loss.hybridize()
    x = inputs[0].astype(np.float64)
    rest = [nd(v, np.float64) for v in inputs[1:]]
    head = None

    def objective(xv):
        out = loss(mx.nd.array(xv, dtype=np.float64), *rest).asnumpy()
        return float((out * head).sum())

    xa = mx.nd.array(x, dtype=np.float64)
    xa.attach_grad()
    with autograd.record():
        out = loss(xa, *rest)
    head = rng.uniform(0.5, 1.5, out.shape)
    out.backward(mx.nd.array(head, dtype=np.float64))
    eps = 1e-6
    num = np.zeros(x.size)
    for i in range(x.size):
        xp, xm = x.copy().reshape(-1), x.copy().reshape(-1)
        xp[i] += eps
        xm[i] -= eps
        num[i] = (objective(xp.reshape(x.shape)) - objective(xm.reshape(x.shape))) / (2 * eps)
    np.testing.assert_allclose(xa.grad.asnumpy().reshape(-1), num, rtol=1e-5, atol=1e-7)


# -- weighting, batch axis, names ------------------------------------------------------------------
def test_weight_and_sample_weight_semantics():
    pred, label = _r(N, 3), _r(N, 3)
    base = evaluate(gluon.loss.L1Loss(), [pred, label])
    np.testing.assert_allclose(evaluate(gluon.loss.L1Loss(weight=3), [pred, label]), 3 * base, rtol=1e-6)
    # per-sample weights broadcast over the other axes, elementwise weights weigh each element
    sw = _u(0, 2, N, 1)
    np.testing.assert_allclose(evaluate(gluon.loss.L1Loss(), [pred, label, sw]), base * sw[:, 0], rtol=1e-6)
    full = _u(0, 2, N, 3)
    np.testing.assert_allclose(evaluate(gluon.loss.L1Loss(), [pred, label, full]),
                               (np.abs(label - pred) * full).mean(axis=1), rtol=1e-6)
    zero = np.zeros((N, 1))
    np.testing.assert_array_equal(evaluate(gluon.loss.SoftmaxCELoss(), [pred, np.zeros(N), zero]), 0)
    # L2Loss's default weight is 1 (the 1/2 is part of the loss); the others default to None
    assert gluon.loss.L2Loss()._weight == 1.0 and gluon.loss.L1Loss()._weight is None
    np.testing.assert_allclose(evaluate(gluon.loss.L2Loss(weight=4), [pred, label]),
                               4 * evaluate(gluon.loss.L2Loss(), [pred, label]), rtol=1e-6)


def test_mean_over_non_batch_axes():
    pred, label = _r(2, 3, 4, 5), _r(2, 3, 4, 5)
    for axis in range(4):
        out = evaluate(gluon.loss.L1Loss(batch_axis=axis), [pred, label])
        np.testing.assert_allclose(out, per_sample_mean(np.abs(pred - label), axis), rtol=1e-6)
    one_d = evaluate(gluon.loss.L2Loss(), [[1.0, 2, 3, 4], [1.0, 3, 5, 7]])
    np.testing.assert_allclose(one_d, [0, 0.5, 2, 4.5])  # a 1-D loss has nothing to average


def test_repr_and_block_names():
    assert repr(gluon.loss.L2Loss()) == "L2Loss(batch_axis=0, w=1.0)"
    assert repr(gluon.loss.CTCLoss(label_layout="TN", weight=2)) == "CTCLoss(batch_axis=1, w=2)"
    assert repr(gluon.loss.SoftmaxCELoss(weight=0.5)) == "SoftmaxCrossEntropyLoss(batch_axis=0, w=0.5)"
    assert gluon.loss.SoftmaxCELoss is gluon.loss.SoftmaxCrossEntropyLoss
    assert gluon.loss.SigmoidBCELoss is gluon.loss.SigmoidBinaryCrossEntropyLoss
    assert gluon.loss.HuberLoss(prefix="hub_").prefix == "hub_"
    assert isinstance(gluon.loss.HingeLoss(), gluon.HybridBlock)
    assert len(gluon.loss.L1Loss().collect_params()) == 0
    for name in gluon.loss.__all__:
        assert hasattr(gluon.loss, name)


def test_relations_between_losses():
    """BCE from probabilities equals 2-class softmax CE from their logs; logistic equals BCE."""
    p = _u(0.1, 0.9, 20, 1)
    label = np.round(_u(0, 1, 20, 1))
    bce = evaluate(gluon.loss.SigmoidBCELoss(from_sigmoid=True), [p, label])
    ce = evaluate(gluon.loss.SoftmaxCELoss(from_logits=True), [np.log(np.concatenate([1 - p, p], 1) + 1e-8), label])
    np.testing.assert_allclose(bce, ce, rtol=1e-4, atol=1e-5)
    x = _u(-10, 10, 20, 1)
    bce = evaluate(gluon.loss.SigmoidBCELoss(), [x, label])
    np.testing.assert_allclose(evaluate(gluon.loss.LogisticLoss(label_format="binary"), [x, label]), bce, atol=1e-6)
    np.testing.assert_allclose(evaluate(gluon.loss.LogisticLoss(), [x, 2 * label - 1]), bce, atol=1e-6)


def test_hybridized_loss_reuses_its_graph_for_new_values():
    loss = gluon.loss.HuberLoss()
    loss.hybridize()
    for _ in range(3):
        pred, label = _r(N, 3), _r(N, 3)
        np.testing.assert_allclose(loss(nd(pred), nd(label)).asnumpy(), ref_huber(pred, label), rtol=1e-5)
    pred, label = _r(N + 2, 5), _r(N + 2, 5)  # a new shape is traced anew
    np.testing.assert_allclose(loss(nd(pred), nd(label)).asnumpy(), ref_huber(pred, label), rtol=1e-5)


# -- symbols -----------------------------------------------------------------------------------------
def test_symbol_inputs_build_a_graph_that_runs():
    pred, label, w = mx.sym.var("pred"), mx.sym.var("label"), mx.sym.var("w")
    out = gluon.loss.SoftmaxCELoss()(pred, label, w)
    assert isinstance(out, mx.sym.Symbol)
    assert sorted(out.list_arguments()) == ["label", "pred", "w"]
    x, y, sw = _r(N, 5), rng.integers(0, 5, N), _u(0, 1, N, 1)
    ex = out.simple_bind(mx.cpu(), pred=(N, 5), label=(N,), w=(N, 1))
    ex.arg_dict["pred"][:] = x
    ex.arg_dict["label"][:] = y
    ex.arg_dict["w"][:] = sw
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), ref_softmax_ce(x, y, sw), rtol=1e-5)


def test_symbolic_ctc_with_make_loss_trains_the_inputs_gradient():
    pred, label = mx.sym.var("pred"), mx.sym.var("label")
    out = mx.sym.make_loss(gluon.loss.CTCLoss()(pred, label))
    x = _r(2, 6, 4)
    lab = np.array([[0, 1, 1], [2, -1, -1]])
    ex = out.simple_bind(mx.cpu(), pred=x.shape, label=lab.shape)
    ex.arg_dict["pred"][:] = x
    ex.arg_dict["label"][:] = lab
    ex.forward(is_train=True)
    ex.backward()
    xa = nd(x)
    xa.attach_grad()
    with autograd.record():
        y = gluon.loss.CTCLoss()(xa, nd(lab))
    y.backward()
    np.testing.assert_allclose(ex.grad_dict["pred"].asnumpy(), xa.grad.asnumpy(), rtol=1e-5, atol=1e-6)


# -- errors --------------------------------------------------------------------------------------------
@MODES
def test_label_size_mismatch_names_the_loss(hybridize):
    for make in (gluon.loss.L2Loss, gluon.loss.L1Loss, gluon.loss.HuberLoss, gluon.loss.SigmoidBCELoss):
        with pytest.raises(MXNetError, match="(?i)shape"):
            evaluate(make(), [_r(2, 3), _r(2, 2)], hybridize)
    if not hybridize:
        with pytest.raises(ShapeError, match=r"L2Loss: label has shape \(2, 2\) \(4 elements\) but pred has "
                                             r"shape \(2, 3\)"):
            evaluate(gluon.loss.L2Loss(), [_r(2, 3), _r(2, 2)])
        with pytest.raises(ValueError):  # what MXNet's NDArray.reshape raises for a larger label
            evaluate(gluon.loss.L1Loss(), [_r(2, 2), _r(2, 3)])
        with pytest.raises(ShapeError, match="TripletLoss: negative has shape"):
            evaluate(gluon.loss.TripletLoss(), [_r(2, 3), _r(2, 3), _r(2, 2)])


@MODES
def test_other_shape_errors(hybridize):
    with pytest.raises(MXNetError, match="broadcast"):  # sample_weight that does not broadcast
        evaluate(gluon.loss.L1Loss(), [_r(2, 3), _r(2, 3), _r(3, 1)], hybridize)
    with pytest.raises(MXNetError, match="pick"):  # sparse label of the wrong batch size
        evaluate(gluon.loss.SoftmaxCELoss(), [_r(2, 3), np.zeros(3)], hybridize)
    with pytest.raises(MXNetError, match="batch size for the labels and data arrays must be the same"):
        evaluate(gluon.loss.CTCLoss(), [_r(2, 3, 4), np.zeros((3, 2))], hybridize)
    with pytest.raises(MXNetError, match=r"\(2, 2\).*\(2, 3\)"):  # label and pred of different shapes
        evaluate(gluon.loss.KLDivLoss(), [_r(2, 3), _probs(2, 2)], hybridize)


def test_constructor_and_weight_errors():
    with pytest.raises(ValueError, match="label_format can only be signed or binary"):
        gluon.loss.LogisticLoss(label_format="foo")
    with pytest.raises(AssertionError, match="Only 'NTC' and 'TNC' layouts"):
        gluon.loss.CTCLoss(layout="NCT")
    with pytest.raises(AssertionError, match="Only 'NT' and 'TN' layouts"):
        gluon.loss.CTCLoss(label_layout="TT")
    with pytest.raises(AssertionError, match="weight must be a number"):
        evaluate(gluon.loss.L1Loss(weight="a"), [_r(2, 3), _r(2, 3)])
    with pytest.raises(NotImplementedError):
        gluon.loss.Loss(None, 0)(nd(_r(2, 3)))


# -- a loss inside a model --------------------------------------------------------------------------
@MODES
def test_parameter_gradients_through_a_loss(hybridize):
    """A Dense layer trained through SoftmaxCELoss: the weight gradient is (softmax - onehot)^T x * w."""
    from core_blocks import define  # shared Gluon test blocks (tests/gluon/core_blocks.py)
    dense = define(gluon)["TinyDense"](3, in_units=4)
    dense.initialize(mx.init.Normal(0.5))
    loss = gluon.loss.SoftmaxCELoss(weight=0.5)
    if hybridize:
        dense.hybridize()
        loss.hybridize()
    x, y, sw = _r(5, 4), rng.integers(0, 3, 5), _u(0.5, 1.5, 5, 1)
    with autograd.record():
        out = loss(dense(nd(x)), nd(y), nd(sw))
    out.backward()
    w, b = dense.weight.data().asnumpy(), dense.bias.data().asnumpy()
    z = x @ w.T + b
    np.testing.assert_allclose(out.asnumpy(), 0.5 * ref_softmax_ce(z, y, sw), rtol=1e-5)
    p = np.exp(log_softmax(z))
    dz = (p - np.eye(3)[y]) * 0.5 * sw
    np.testing.assert_allclose(dense.weight.grad().asnumpy(), dz.T @ x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dense.bias.grad().asnumpy(), dz.sum(axis=0), rtol=1e-5, atol=1e-6)
