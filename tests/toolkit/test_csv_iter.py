"""mx.io.CSVIter: rows of CSV files in batches, MXNet 1.9.1's names, padding and dtypes."""
import numpy as np
import pytest

import ember as mx
from ember.base import ArgumentError, FormatError, MXNetError


@pytest.fixture
def files(tmp_path):
    data = np.arange(30).reshape(10, 3)
    label = np.arange(10) % 3
    np.savetxt(tmp_path / "d.csv", data, delimiter=",", fmt="%d")
    np.savetxt(tmp_path / "l.csv", label, delimiter=",", fmt="%d")
    return str(tmp_path / "d.csv"), str(tmp_path / "l.csv"), data, label


def test_batches_round_batch_and_next_epoch(files):
    dpath, lpath, data, label = files
    it = mx.io.CSVIter(data_csv=dpath, data_shape=(3,), label_csv=lpath, batch_size=4, dtype="int32")
    assert [(d.name, d.shape) for d in it.provide_data] == [("data", (4, 3))]
    assert [(d.name, d.shape) for d in it.provide_label] == [("softmax_label", (4,))]
    batches = list(it)
    assert len(batches) == 3
    rows = [np.arange(0, 4), np.arange(4, 8), np.array([8, 9, 0, 1])]  # the last batch wraps to the start
    for b, r in zip(batches, rows):
        assert b.data[0].dtype == np.int32 and b.label[0].dtype == np.int32
        np.testing.assert_array_equal(b.data[0].asnumpy(), data[r])
        np.testing.assert_array_equal(b.label[0].asnumpy(), label[r])
        np.testing.assert_array_equal(b.index, r)
    assert [b.pad for b in batches] == [0, 0, 2]
    # as MXNet: the next epoch starts after the two rows the rounded batch already used
    it.reset()
    second = [b.data[0].asnumpy() for b in it]
    np.testing.assert_array_equal(np.concatenate(second), data[2:])
    it.reset()
    assert len(list(it)) == 3


def test_no_round_batch_no_label_and_getters(files):
    dpath, _, data, _ = files
    it = mx.io.CSVIter(data_csv=dpath, data_shape=(1, 3), batch_size=4, round_batch=False)
    assert it.provide_data[0].shape == (4, 1, 3)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    np.testing.assert_array_equal(batches[2].data[0].asnumpy()[:2, 0], data[8:])
    for b in batches:
        assert b.data[0].dtype == np.float32
        np.testing.assert_array_equal(b.label[0].asnumpy(), np.zeros(4))
    it.reset()
    assert it.iter_next()
    np.testing.assert_array_equal(it.getdata().asnumpy()[:, 0], data[:4])
    assert it.getlabel().shape == (4,) and it.getpad() == 0


def test_label_shape_and_int64_exact(tmp_path):
    big = 2 ** 53 + 1  # not representable in float64: must be parsed as an integer
    (tmp_path / "d.csv").write_text("\n".join(",".join([str(big)] * 4) for _ in range(3)) + "\n")
    it = mx.io.CSVIter(data_csv=str(tmp_path / "d.csv"), data_shape=(2, 2), label_csv=str(tmp_path / "d.csv"),
                       label_shape=(4,), batch_size=3, dtype="int64")
    b = it.next()
    assert b.data[0].shape == (3, 2, 2) and b.label[0].shape == (3, 4)
    assert b.data[0].dtype == np.int64
    assert (b.data[0].asnumpy() == big).all() and (b.label[0].asnumpy() == big).all()
    with pytest.raises(StopIteration):
        it.next()


def test_errors(files, tmp_path):
    dpath, lpath, _, _ = files
    with pytest.raises(FormatError, match="line 1 .* has 3 values, shape \\(4,\\) needs 4"):
        mx.io.CSVIter(data_csv=dpath, data_shape=(4,), batch_size=2)
    with pytest.raises(FileNotFoundError):
        mx.io.CSVIter(data_csv=str(tmp_path / "missing.csv"), data_shape=(3,))
    with pytest.raises(ArgumentError, match="foo"):
        mx.io.CSVIter(data_csv=dpath, data_shape=(3,), foo=1)
    with pytest.raises(MXNetError, match="dtype"):
        mx.io.CSVIter(data_csv=dpath, data_shape=(3,), dtype="float16")
    (tmp_path / "bad.csv").write_text("1,2,x\n")
    with pytest.raises(FormatError, match="not int32"):
        mx.io.CSVIter(data_csv=str(tmp_path / "bad.csv"), data_shape=(3,), dtype="int32")
    (tmp_path / "short.csv").write_text("1\n2\n")
    with pytest.raises(FormatError, match="10 rows, label_csv 2"):
        mx.io.CSVIter(data_csv=dpath, data_shape=(3,), label_csv=str(tmp_path / "short.csv"))
