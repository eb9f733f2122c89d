"""mx.io.LibSVMIter (CSR batches from LIBSVM files, MXNet's batch rounding) and NDArrayIter over CSR
data (CSRNDArray or scipy.sparse.csr_matrix), checked against dense numpy references."""
import numpy as np
import pytest
from scipy import sparse

import ember as mx
from ember.base import ArgumentError, FormatError, MissingFileError, MXNetError

DATA = "1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2  # a comment\n4 2:-1.2\n"
DENSE = np.array([[0.5, 0, 1.2], [0, 0, 0], [0.6, 2.4, 1.2], [0, 0, -1.2]], np.float32)
LABELS = np.array([1, -2, -3, 4], np.float32)


@pytest.fixture
def files(tmp_path):
    data, label = tmp_path / "data.t", tmp_path / "label.t"
    data.write_text(DATA)
    label.write_text("1.0\n-2.0 0:0.125\n-3.0 2:1.2\n4 1:1.0 2:-1.2\n")
    return str(data), str(label)


def _epoch(it):
    return [(b.data[0], b.label[0], b.pad, list(b.index)) for b in it]


def test_rounded_batches_wrap_and_the_next_epoch_continues(files):
    it = mx.io.LibSVMIter(data_libsvm=files[0], data_shape=(3,), batch_size=3)
    assert it.provide_data[0].shape == (3, 3) and it.provide_label[0].shape == (3,)
    first = _epoch(it)
    assert [b[2] for b in first] == [0, 2] and [b[3] for b in first] == [[0, 1, 2], [3, 0, 1]]
    for data, label, _, index in first:
        assert data.stype == "csr"
        data.check_format(True)
        np.testing.assert_array_equal(data.asnumpy(), DENSE[index])
        np.testing.assert_array_equal(label.asnumpy(), LABELS[index])
    it.reset()  # MXNet's batch loader: the rows the rounded batch took are not read again first
    assert [b[3] for b in _epoch(it)] == [[2, 3, 0]]
    it.reset()
    assert [b[3] for b in _epoch(it)] == [[1, 2, 3]]


def test_unrounded_last_batch_is_padded_with_empty_rows(files):
    it = mx.io.LibSVMIter(data_libsvm=files[0], data_shape=(3,), batch_size=3, round_batch=False)
    batches = _epoch(it)
    assert [b[2] for b in batches] == [0, 2]
    np.testing.assert_array_equal(batches[1][0].asnumpy(), np.vstack([DENSE[3:], np.zeros((2, 3))]))
    np.testing.assert_array_equal(batches[1][1].asnumpy(), [4, 0, 0])
    it.reset()
    assert len(_epoch(it)) == 2


def test_label_file_gives_csr_labels(files):
    it = mx.io.LibSVMIter(data_libsvm=files[0], label_libsvm=files[1], data_shape=(3,), label_shape=(3,),
                          batch_size=2)
    labels = np.array([[0, 0, 0], [0.125, 0, 0], [0, 0, 1.2], [0, 1.0, -1.2]], np.float32)
    assert it.provide_label[0].shape == (2, 3)
    for _, label, _, index in _epoch(it):
        assert label.stype == "csr"
        np.testing.assert_array_equal(label.asnumpy(), labels[index])


def test_parts_split_the_rows(files):
    seen = []
    for part in range(2):
        it = mx.io.LibSVMIter(data_libsvm=files[0], data_shape=(3,), batch_size=2, num_parts=2, part_index=part)
        seen.append([row for b in _epoch(it) for row in b[0].asnumpy().tolist()])
    np.testing.assert_array_equal(np.array(seen[0] + seen[1]), DENSE)


def test_trains_a_sparse_linear_model(files):
    it = mx.io.LibSVMIter(data_libsvm=files[0], data_shape=(3,), batch_size=2)
    w = mx.nd.ones((3, 1))
    for batch in it:  # the batch feeds sparse dot as MXNet's sparse linear examples do
        out = mx.nd.sparse.dot(batch.data[0], w)
        np.testing.assert_allclose(out.asnumpy().ravel(), DENSE[batch.index.astype(int)].sum(1), rtol=1e-6)


def test_bad_files_and_arguments(tmp_path, files):
    bad = tmp_path / "bad.t"
    bad.write_text("1.0 0:0.5\n-3.0 -1:0.6 1:2.4\n")
    with pytest.raises(MXNetError, match="line 2.*index -1"):
        mx.io.LibSVMIter(data_libsvm=str(bad), data_shape=(3,), batch_size=1)
    bad.write_text("1.0 7:0.5\n")
    with pytest.raises(FormatError, match=r"index 7 is outside \[0, 3\)"):
        mx.io.LibSVMIter(data_libsvm=str(bad), data_shape=(3,), batch_size=1)
    bad.write_text("1.0 0=0.5\n")
    with pytest.raises(FormatError, match="not LIBSVM"):
        mx.io.LibSVMIter(data_libsvm=str(bad), data_shape=(3,), batch_size=1)
    with pytest.raises(MissingFileError):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / "none.t"), data_shape=(3,))
    with pytest.raises(ArgumentError, match="unknown argument"):
        mx.io.LibSVMIter(data_libsvm=files[0], data_shape=(3,), shuffle=True)
    with pytest.raises(ArgumentError, match="label_libsvm"):
        mx.io.LibSVMIter(data_libsvm=files[0], data_shape=(3,), label_shape=(2,))
    with pytest.raises(ArgumentError, match="part_index"):
        mx.io.LibSVMIter(data_libsvm=files[0], data_shape=(3,), num_parts=2, part_index=2)
    short = tmp_path / "short.t"
    short.write_text("1 0:1\n")
    with pytest.raises(FormatError, match="rows"):
        mx.io.LibSVMIter(data_libsvm=files[0], label_libsvm=str(short), data_shape=(3,), label_shape=(3,))


@pytest.mark.parametrize("kind", ["csrndarray", "scipy"])
def test_ndarray_iter_over_csr(kind):
    rs = np.random.RandomState(0)
    dense = (rs.rand(10, 6) * (rs.rand(10, 6) < 0.4)).astype(np.float32)
    csr = mx.nd.sparse.csr_matrix(dense) if kind == "csrndarray" else sparse.csr_matrix(dense)
    with pytest.raises(NotImplementedError, match="discard"):
        mx.io.NDArrayIter({"data": csr}, dense, 3)
    it = mx.io.NDArrayIter({"data": csr}, np.arange(10), 3, last_batch_handle="discard")
    got = [(b.data[0], b.label[0].asnumpy()) for b in it]
    assert len(got) == 3
    for data, label in got:
        assert data.stype == "csr"
        np.testing.assert_array_equal(data.asnumpy(), dense[label.astype(int)])
    np.random.seed(1)
    it = mx.io.NDArrayIter({"csr_data": csr, "dns_data": dense}, np.arange(10), 3, shuffle=True,
                           last_batch_handle="discard")
    for b in it:  # shuffled: each batch's CSR rows, dense rows and labels still agree
        rows = b.label[0].asnumpy().astype(int)
        np.testing.assert_array_equal(b.data[0].asnumpy(), dense[rows])
        np.testing.assert_array_equal(b.data[1].asnumpy(), dense[rows])
    with pytest.raises(TypeError, match="row_sparse"):
        mx.io.NDArrayIter(mx.nd.sparse.row_sparse_array(dense), None, 2, last_batch_handle="discard")
