"""mx.contrib.io.DataLoaderIter: a Gluon DataLoader read as an mx.io.DataIter."""
import numpy as np
import pytest

import ember as mx
from ember.contrib.io import DataLoaderIter
from ember.gluon.data import ArrayDataset, DataLoader


def _dataset(n=10):
    x = np.arange(n * 6, dtype=np.float64).reshape(n, 3, 2)
    y = np.arange(n, dtype=np.int32)
    return x, y, ArrayDataset(x, y)


def test_batches_pad_and_cast():
    x, y, ds = _dataset()
    it = DataLoaderIter(DataLoader(ds, batch_size=4), data_name="img", label_name="lbl")
    assert it.batch_size == 4
    assert [(d.name, d.shape, np.dtype(d.dtype)) for d in it.provide_data] == [("img", (4, 3, 2), np.float32)]
    assert [(d.name, d.shape) for d in it.provide_label] == [("lbl", (4,))]
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    for k, b in enumerate(batches):
        data, label = b.data[0].asnumpy(), b.label[0].asnumpy()
        assert data.dtype == np.float32 and label.dtype == np.float32
        assert data.shape == (4, 3, 2) and label.shape == (4,)
        rows = slice(4 * k, min(4 * k + 4, 10))
        n = rows.stop - rows.start
        np.testing.assert_array_equal(data[:n], x[rows])
        np.testing.assert_array_equal(label[:n], y[rows])
        np.testing.assert_array_equal(data[n:], 0)
    with pytest.raises(StopIteration):
        it.next()
    it.reset()
    again = [b.data[0].asnumpy() for b in it]
    assert len(again) == 3
    np.testing.assert_array_equal(again[0], batches[0].data[0].asnumpy())


def test_discard_last_and_dtype():
    _, _, ds = _dataset()
    it = DataLoaderIter(DataLoader(ds, batch_size=4, last_batch="discard"), dtype="float64")
    batches = list(it)
    assert len(batches) == 2 and all(b.pad == 0 for b in batches)
    assert batches[0].data[0].dtype == np.float64


def test_shuffled_pass_covers_every_sample():
    x, y, ds = _dataset(12)
    it = DataLoaderIter(DataLoader(ds, batch_size=5, shuffle=True))
    for _ in range(2):
        seen = []
        for b in it:
            seen += b.label[0].asnumpy()[:5 - b.pad].astype(int).tolist()
        assert sorted(seen) == list(range(12))
        it.reset()


def test_module_fit_reads_it():
    rng = np.random.RandomState(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = x @ np.array([1.0, -2.0, 0.5], np.float32)
    it = DataLoaderIter(DataLoader(ArrayDataset(x, y), batch_size=16), label_name="lin_label")
    data = mx.sym.Variable("data")
    out = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(data, num_hidden=1, name="fc"),
                                        mx.sym.Variable("lin_label"))
    mod = mx.mod.Module(out, data_names=["data"], label_names=["lin_label"])
    mod.fit(it, num_epoch=40, optimizer="sgd", optimizer_params={"learning_rate": 0.1},
            initializer=mx.init.Zero())
    w = mod.get_params()[0]["fc_weight"].asnumpy().ravel()
    np.testing.assert_allclose(w, [1.0, -2.0, 0.5], atol=1e-2)


def test_bad_loaders_are_refused():
    x, _, _ = _dataset()
    with pytest.raises(ValueError, match="pairs"):
        DataLoaderIter(DataLoader(ArrayDataset(x), batch_size=4))
    with pytest.raises(ValueError, match="no batch"):
        DataLoaderIter([])


def test_no_current_batch():
    _, _, ds = _dataset()
    it = DataLoaderIter(DataLoader(ds, batch_size=4))
    with pytest.raises(StopIteration):
        it.getdata()
