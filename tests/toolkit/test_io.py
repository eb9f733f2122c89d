"""mx.io.NDArrayIter batching, last_batch_handle modes, shuffle, descriptions."""
import numpy as np
import pytest

from ember import io as mio
from ember import ndarray as nd


def _collect(it):
    return [(b.data[0].asnumpy(), b.label[0].asnumpy() if b.label else None, b.pad) for b in it]


def test_pad_mode_wraps_from_start():
    data = np.arange(10 * 2, dtype=np.float32).reshape(10, 2)
    label = np.arange(10, dtype=np.float32)
    it = mio.NDArrayIter(data, label, batch_size=4)
    got = _collect(it)
    assert [p for _, _, p in got] == [0, 0, 2]
    np.testing.assert_array_equal(got[2][1], [8, 9, 0, 1])
    np.testing.assert_array_equal(got[2][0], data[[8, 9, 0, 1]])
    it.reset()
    assert len(_collect(it)) == 3


def test_pad_when_batch_exceeds_data():
    it = mio.NDArrayIter(np.arange(3, dtype=np.float32), batch_size=7)
    (batch,) = list(it)
    np.testing.assert_array_equal(batch.data[0].asnumpy(), [0, 1, 2, 0, 1, 2, 0])
    assert batch.pad == 4


def test_discard_mode():
    it = mio.NDArrayIter(np.arange(10, dtype=np.float32), batch_size=4, last_batch_handle="discard")
    got = _collect(it)
    assert len(got) == 2 and all(p == 0 for _, _, p in got)
    np.testing.assert_array_equal(got[1][0], [4, 5, 6, 7])


def test_roll_over_carries_leftover_into_next_epoch():
    it = mio.NDArrayIter(np.arange(10, dtype=np.float32), batch_size=4, last_batch_handle="roll_over")
    first = _collect(it)
    assert [list(d) for d, _, _ in first] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    it.reset()
    second = _collect(it)
    assert [list(d) for d, _, _ in second] == [[8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]
    assert second[0][2] == 2  # MXNet reports the carried samples as pad
    it.reset()
    third = _collect(it)
    assert [list(d) for d, _, _ in third] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    it.hard_reset()
    assert _collect(it)[0][0].tolist() == [0, 1, 2, 3]


def test_roll_over_with_fewer_samples_than_a_batch():
    it = mio.NDArrayIter(np.arange(3, dtype=np.float32), batch_size=4, last_batch_handle="roll_over")
    assert _collect(it) == []
    it.reset()
    (first,) = _collect(it)  # 3 carried + 1 new sample; the rest of this epoch carries again
    assert first[0].tolist() == [0, 1, 2, 0] and first[2] == 3


def test_shuffle_is_a_permutation_and_keeps_pairs():
    np.random.seed(5)
    data = np.arange(12, dtype=np.float32).reshape(12, 1) * 10
    label = np.arange(12, dtype=np.float32)
    it = mio.NDArrayIter(data, label, batch_size=3, shuffle=True)
    seen_labels = []
    for d, lab, _ in _collect(it):
        np.testing.assert_array_equal(d[:, 0], lab * 10)
        seen_labels.extend(lab)
    assert sorted(seen_labels) == list(range(12))
    assert seen_labels != list(range(12))


def test_dict_inputs_descriptions_and_dtype():
    data = {"b": np.zeros((6, 3, 2), dtype=np.float64), "a": nd.ones((6, 5))}
    it = mio.NDArrayIter(data, {"lab": np.arange(6)}, batch_size=4)
    assert [d.name for d in it.provide_data] == ["a", "b"]
    assert it.provide_data[1].shape == (4, 3, 2)
    assert it.provide_data[1].dtype == np.float32  # numpy data becomes float32, as mx.nd.array makes it in MXNet
    assert it.provide_label == [mio.DataDesc("lab", (4,))]
    batch = next(iter(it))
    assert batch.data[1].dtype == np.float32 and batch.data[0].shape == (4, 5)
    assert batch.provide_data[0].name == "a"
    assert "data shapes: [(4, 5), (4, 3, 2)]" in str(batch)


def test_list_inputs_get_indexed_names_and_default_label_name():
    it = mio.NDArrayIter([np.zeros((4, 1)), np.zeros((4, 2))], np.zeros(4), batch_size=2)
    assert [d.name for d in it.provide_data] == ["_0_data", "_1_data"]
    assert it.provide_label[0].name == "softmax_label"


def test_layout_batch_axis():
    data = np.arange(2 * 6, dtype=np.float32).reshape(2, 6)  # layout TN: batch on axis 1
    it = mio.NDArrayIter(data, batch_size=3, layout="TN")
    assert it.provide_data[0].shape == (2, 3)
    first = next(it)
    np.testing.assert_array_equal(first.data[0].asnumpy(), data[:, :3])


def test_datadesc_and_batch_helpers():
    desc = mio.DataDesc("x", (2, 3), layout="NTC")
    assert desc == ("x", (2, 3)) and desc.layout == "NTC"
    assert mio.DataDesc.get_batch_axis("TNC") == 1 and mio.DataDesc.get_batch_axis(None) == 0
    descs = mio.DataDesc.get_list([("x", (1,)), ("y", (2,))], [("x", np.int32), ("y", np.float16)])
    assert descs[0].dtype == np.int32 and descs[1].shape == (2,)
    assert repr(descs[0]) == "DataDesc[x,(1,),int32,NCHW]"
    with pytest.raises(TypeError, match="list of NDArrays"):
        mio.DataBatch(nd.ones((1,)))


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(data=np.zeros((4, 1)), batch_size=0), ValueError, "batch_size"),
    (dict(data=np.zeros((4, 1)), last_batch_handle="keep"), ValueError, "last_batch_handle"),
    (dict(data=np.zeros((5, 1)), label=np.zeros(4)), ValueError, "at least as many samples"),
    (dict(data=None), ValueError, "must not be None"),
    (dict(data="abc"), TypeError, "input must be"),
    (dict(data=np.zeros((0, 2))), ValueError, "no samples"),
    (dict(data=np.zeros((4, 1)), layout="CHW"), ValueError, "batch axis"),
])
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        mio.NDArrayIter(**kwargs)


def test_arrays_longer_than_the_data_are_read_up_to_its_sample_count():
    # as MXNet (its test_sample_weight_loss scores data[10:] with 20-sample label arrays)
    it = mio.NDArrayIter(np.arange(4.0).reshape(4, 1), {"label": np.arange(6.0), "w": np.ones(6)}, batch_size=2)
    batches = list(it)
    assert it.num_data == 4 and len(batches) == 2
    np.testing.assert_array_equal(batches[1].label[0].asnumpy(), [2.0, 3.0])
