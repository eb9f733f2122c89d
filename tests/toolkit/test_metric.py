"""mx.metric against numpy computations."""
import numpy as np
import pytest

from ember import metric
from ember import ndarray as nd


@pytest.fixture
def batches():
    rs = np.random.RandomState(0)
    out = []
    for n in (7, 5):
        logits = rs.randn(n, 4)
        probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        out.append((rs.randint(0, 4, size=n).astype(np.float32), probs.astype(np.float32)))
    return out


def test_accuracy_over_batches(batches):
    acc = metric.create("acc")
    for label, pred in batches:
        acc.update([nd.array(label)], [nd.array(pred)])
    labels = np.concatenate([b[0] for b in batches])
    preds = np.concatenate([b[1] for b in batches])
    assert acc.get() == ("accuracy", pytest.approx(np.mean(preds.argmax(1) == labels)))
    assert acc.num_inst == 12


def test_accuracy_with_class_ids_and_axis():
    acc = metric.Accuracy()
    acc.update([nd.array([0, 1, 2, 2])], [nd.array([0, 1, 1, 2])])  # same shape: already labels
    assert acc.get()[1] == pytest.approx(0.75)
    acc0 = metric.Accuracy(axis=0)
    acc0.update([nd.array([1, 0])], [nd.array([[0.1, 0.9], [0.8, 0.2]])])
    assert acc0.get()[1] == pytest.approx(1.0)


def test_topk(batches):
    top2 = metric.create("top_k_accuracy", top_k=2)
    assert top2.name == "top_k_accuracy_2"
    hits = total = 0
    for label, pred in batches:
        top2.update([nd.array(label)], [nd.array(pred)])
        order = np.argsort(-pred, axis=1)[:, :2]
        hits += (order == label[:, None]).any(1).sum()
        total += len(label)
    assert top2.get()[1] == pytest.approx(hits / total)
    with pytest.raises(metric.MetricError, match="top_k > 1"):
        metric.TopKAccuracy(top_k=1)


def test_cross_entropy_and_nll(batches):
    ce, nll = metric.create("ce"), metric.create("nll_loss")
    vals = []
    for label, pred in batches:
        ce.update([nd.array(label)], [nd.array(pred)])
        nll.update([nd.array(label)], [nd.array(pred)])
        vals.extend(-np.log(pred[np.arange(len(label)), label.astype(int)] + 1e-12))
    assert ce.get()[1] == pytest.approx(np.mean(vals), rel=1e-6)
    assert nll.get() == ("nll-loss", pytest.approx(np.mean(vals), rel=1e-6))
    with pytest.raises(metric.MetricError, match="class indices"):
        ce.update([nd.array([7])], [nd.array([[0.5, 0.5]])])


@pytest.mark.parametrize("name, fn", [
    ("mse", lambda d: (d ** 2).mean()),
    ("mae", lambda d: np.abs(d).mean()),
    ("rmse", lambda d: np.sqrt((d ** 2).mean())),
])
def test_regression_metrics_average_per_batch(name, fn):
    rs = np.random.RandomState(1)
    m = metric.create(name)
    per_batch = []
    for n in (4, 9):
        label, pred = rs.randn(n), rs.randn(n, 1)
        m.update([nd.array(label)], [nd.array(pred)])
        per_batch.append(fn(label[:, None] - pred))
    assert m.get() == (name, pytest.approx(np.mean(per_batch), rel=1e-5))


def test_composite_local_global_and_reset(batches):
    comp = metric.create(["acc", "mse"])
    (label, pred), (label2, pred2) = batches
    comp.update([nd.array(label)], [nd.array(pred)])
    names, values = comp.get()
    assert names == ["accuracy", "mse"]
    comp.reset_local()
    assert all(np.isnan(v) for v in comp.get()[1])
    assert not np.isnan(comp.get_global()[1][0])
    comp.update([nd.array(label2)], [nd.array(pred2)])
    assert comp.get_global_name_value()[0][1] == pytest.approx(
        np.mean(np.concatenate([pred.argmax(1) == label, pred2.argmax(1) == label2])))
    comp.reset()
    assert np.isnan(comp.get_global()[1][0])
    assert comp.get_metric(1).name == "mse"
    with pytest.raises(IndexError):
        comp.get_metric(5)


def test_update_dict_and_custom():
    m = metric.CustomMetric(lambda l, p: float(np.abs(l - p).sum()), name="l1")
    m.update_dict({"softmax_label": nd.array([1.0, 2.0])}, {"out": nd.array([0.5, 2.5])})
    assert m.get_name_value() == [("l1", pytest.approx(1.0))]
    pair = metric.np(lambda l, p: (float((l == p).sum()), l.size), name="eq")
    pair.update([np.array([1, 2, 3])], [np.array([1, 0, 3])])
    assert pair.get()[1] == pytest.approx(2 / 3)
    loss = metric.Loss()
    loss.update(None, [nd.array([1.0, 2.0, 3.0])])
    assert loss.get()[1] == pytest.approx(2.0)


def test_errors():
    with pytest.raises(metric.MetricError, match="cannot find metric 'f1x'"):
        metric.create("f1x")
    acc = metric.Accuracy()
    with pytest.raises(metric.MetricError, match="does not match"):
        acc.update([nd.array([1])], [nd.array([[0.1]]), nd.array([[0.2]])])
    with pytest.raises(TypeError, match="NDArrays or numpy arrays"):
        acc.update([[1, 2]], [[1, 2]])
    with pytest.raises(metric.MetricError, match="cannot be compared"):
        metric.MSE().update([nd.array([1.0, 2.0])], [nd.array([1.0, 2.0, 3.0])])
    assert np.isnan(metric.MSE().get()[1])


def _f1(label, pred_label):
    tp = np.sum((pred_label == 1) & (label == 1))
    fp = np.sum((pred_label == 1) & (label == 0))
    fn = np.sum((pred_label == 0) & (label == 1))
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return 2 * p * r / (p + r) if p + r else 0.0


def test_f1_macro_and_micro():
    rs = np.random.RandomState(4)
    batches = [(rs.randint(0, 2, n).astype(np.float32), rs.rand(n, 2).astype(np.float32)) for n in (9, 13)]
    macro, micro = metric.create("f1"), metric.F1(average="micro")
    for label, pred in batches:
        macro.update([nd.array(label)], [nd.array(pred)])
        micro.update([nd.array(label)], [nd.array(pred)])
    assert macro.get()[1] == pytest.approx(np.mean([_f1(l, p.argmax(1)) for l, p in batches]))
    all_l = np.concatenate([b[0] for b in batches])
    all_p = np.concatenate([b[1] for b in batches]).argmax(1)
    assert micro.get()[1] == pytest.approx(_f1(all_l, all_p))
    with pytest.raises(metric.MetricError, match="binary"):
        macro.update([nd.array([0, 1, 2])], [nd.array(np.ones((3, 2)))])  # more than two classes, as MXNet


def test_perplexity_with_ignore_label():
    rs = np.random.RandomState(5)
    probs = rs.dirichlet(np.ones(5), size=(2, 6)).astype(np.float32)  # (batch, time, vocab)
    label = rs.randint(0, 5, size=(2, 6)).astype(np.float32)
    label[0, :2] = 0
    ppl = metric.Perplexity(ignore_label=0)
    ppl.update([nd.array(label)], [nd.array(probs)])
    flat_p, flat_l = probs.reshape(-1, 5), label.ravel().astype(int)
    keep = flat_l != 0
    want = np.exp(-np.log(flat_p[np.arange(12)[keep], flat_l[keep]]).mean())
    assert ppl.get() == ("perplexity", pytest.approx(want, rel=1e-5))



def test_perplexity_clips_labels_outside_the_classes():
    # MXNet 1.9.1 reads the probability with pick(mode='clip'): label 5 of 5 classes reads class 4,
    # label -3 class 0; the ignored label (-1) is left out before that
    probs = np.array([[0.1, 0.2, 0.3, 0.15, 0.25], [0.3, 0.1, 0.2, 0.2, 0.2], [0.5, 0.1, 0.1, 0.1, 0.2]],
                     np.float32)
    ppl = metric.Perplexity(ignore_label=-1)
    ppl.update([nd.array([5, -3, -1])], [nd.array(probs)])
    want = np.exp(-(np.log(0.25) + np.log(0.3)) / 2)
    assert ppl.get() == ("perplexity", pytest.approx(want, rel=1e-5))

def test_pearson_macro_and_micro():
    rs = np.random.RandomState(6)
    batches = [(rs.randn(n), rs.randn(n)) for n in (10, 7)]
    macro, micro = metric.create("pearsonr"), metric.PearsonCorrelation(average="micro")
    for label, pred in batches:
        macro.update([nd.array(label)], [nd.array(pred)])
        micro.update([nd.array(label)], [nd.array(pred)])
    assert macro.get()[1] == pytest.approx(np.mean([np.corrcoef(p, l)[0, 1] for l, p in batches]), rel=1e-5)
    all_l = np.concatenate([b[0] for b in batches])
    all_p = np.concatenate([b[1] for b in batches])
    assert micro.get()[1] == pytest.approx(np.corrcoef(all_p, all_l)[0, 1], rel=1e-5)


def _counts(label, pred_label):
    pos, lpos = pred_label == 1, label == 1
    return [int(np.sum(pos & lpos)), int(np.sum(pos & ~lpos)), int(np.sum(~pos & lpos)), int(np.sum(~pos & ~lpos))]


def _mcc(tp, fp, fn, tn):
    den = np.prod([t for t in (tp + fp, tp + fn, tn + fp, tn + fn) if t]) if tp + fp + fn + tn else 1.0
    return (tp * tn - fp * fn) / np.sqrt(den) if tp + fp + fn + tn else 0.0


def test_micro_f1_counts_instances():
    # MXNet's micro F1: num_inst is the number of samples (tn included); reset_local keeps the global counts
    f1 = metric.create("f1", average="micro")
    assert np.isnan(f1.get()[1])
    f1.update([nd.array([1, 0]), nd.array([1, 0])], [nd.array([[0.1, 0.9], [0.5, 0.5]]),
                                                    nd.array([[0.85, 0.15], [1.0, 0.0]])])
    assert f1.num_inst == 4 and f1.get()[1] == pytest.approx(2 / 3)
    f1.reset_local()
    f1.update([nd.array([0, 1])], [nd.array([[0.6, 0.4], [0.2, 0.8]])])
    assert f1.num_inst == 2 and f1.global_num_inst == 6
    assert f1.get()[1] == pytest.approx(1.0)
    assert f1.get_global()[1] == pytest.approx(2 * 2 / (2 * 2 + 1))
    macro = metric.F1()
    macro.update([nd.array([0, 0])], [nd.array([[0.9, 0.1], [0.8, 0.2]])])
    assert macro.get()[1] == 0.0 and macro.num_inst == 1


def test_mcc_macro_and_micro():
    rs = np.random.RandomState(7)
    batches = [(rs.randint(0, 2, n), rs.rand(n, 2)) for n in (11, 6, 9)]
    macro, micro = metric.MCC(), metric.create("mcc", average="micro")
    assert np.isnan(macro.get()[1]) and np.isnan(micro.get()[1])
    for label, pred in batches:
        macro.update([nd.array(label)], [nd.array(pred)])
        micro.update([nd.array(label)], [nd.array(pred)])
    per_batch = [_mcc(*_counts(l, p.argmax(1))) for l, p in batches]
    assert macro.get()[1] == pytest.approx(np.mean(per_batch)) and macro.num_inst == 3
    total = np.sum([_counts(l, p.argmax(1)) for l, p in batches], axis=0)
    assert micro.get()[1] == pytest.approx(_mcc(*total)) and micro.num_inst == 26
    # a constant prediction: the zero factors of the denominator count as 1
    const = metric.MCC()
    const.update([nd.array([0, 0])], [nd.array([[0.9, 0.1], [0.8, 0.2]])])
    assert const.get()[1] == 0.0
    with pytest.raises(metric.MetricError, match="binary"):
        const.update([nd.array([0, 1, 2])], [nd.array(np.ones((3, 2)))])


def _gorodkin(cm):
    n, c = cm.sum(), np.trace(cm)
    p, t = cm.sum(axis=1), cm.sum(axis=0)
    return (c * n - (p * t).sum()) / np.sqrt((n * n - (p * p).sum()) * (n * n - (t * t).sum()))


def test_pcc_multiclass_matches_the_confusion_matrix_formula():
    rs = np.random.RandomState(8)
    label = rs.randint(0, 4, 60)
    scores = rs.rand(60, 4) + np.eye(4)[label] * 0.6
    pcc = metric.create("pcc")
    assert np.isnan(pcc.get()[1])
    pcc.update([nd.array(label[:25]), nd.array(label[25:])], [nd.array(scores[:25]), nd.array(scores[25:])])
    cm = np.zeros((4, 4))
    np.add.at(cm, (scores.argmax(1), label), 1)
    assert pcc.get()[1] == pytest.approx(_gorodkin(cm))
    # class indices as predictions, one sample per update: the same value
    one_by_one = metric.PCC()
    for l, p in zip(label[::-1], scores.argmax(1)[::-1]):
        one_by_one.update([nd.array([l])], [nd.array([p])])
    assert one_by_one.get()[1] == pytest.approx(pcc.get()[1], rel=1e-12)
    assert one_by_one.num_inst == 60 and one_by_one.sum_metric == pytest.approx(60 * pcc.get()[1])
    # binary: equals MCC
    lab2, sc2 = rs.randint(0, 2, 30), rs.rand(30, 2)
    pcc2, mcc2 = metric.PCC(), metric.MCC()
    pcc2.update([nd.array(lab2)], [nd.array(sc2)])
    mcc2.update([nd.array(lab2)], [nd.array(sc2)])
    assert pcc2.get()[1] == pytest.approx(mcc2.get()[1])
    # local / global
    pcc2.reset_local()
    assert np.isnan(pcc2.get()[1]) and pcc2.get_global()[1] == pytest.approx(mcc2.get()[1])


@pytest.mark.parametrize("name, kwargs", [("acc", {"axis": 0}), ("f1", {"average": "micro"}), ("mcc", {}),
                                          ("perplexity", {"ignore_label": -1}), ("pearsonr", {}), ("pcc", {}),
                                          ("nll_loss", {}), ("loss", {}), ("top_k_acc", {"top_k": 3})])
def test_create_round_trips_get_config(name, kwargs):
    import json
    m = metric.create(name, **kwargs)
    again = metric.create(json.dumps(m.get_config()))
    assert type(again) is type(m) and again.name == m.name or name == "top_k_acc"
    for key, value in kwargs.items():
        assert again.get_config()[key] == value
    assert type(metric.create(m.get_config())) is type(m)                       # a dict config
    assert type(metric.create(json.dumps([name, kwargs]))) is type(m)           # '[name, kwargs]'
    assert type(metric.create((name, kwargs))) is type(m)                       # (name, kwargs)


def test_create_composite_from_config_and_other_forms():
    import json
    comp = metric.create(["acc", "f1"])
    again = metric.create(json.dumps(comp.get_config()))
    assert isinstance(again, metric.CompositeEvalMetric)
    assert [type(m) for m in again.metrics] == [metric.Accuracy, metric.F1]
    assert again.get_config() == comp.get_config()
    m = metric.Accuracy()
    assert metric.create(m) is m
    with pytest.raises(metric.MetricError, match="already a metric"):
        metric.create(m, axis=0)
    assert isinstance(metric.create(lambda l, p: 0.0), metric.CustomMetric)
    assert isinstance(metric.create("Torch"), metric.Loss) and metric.create("caffe").name == "caffe"
    with pytest.raises(metric.MetricError, match="'metric' entry"):
        metric.create({"name": "x"})
    with pytest.raises(metric.MetricError, match="cannot parse"):
        metric.create("{not json")
