"""MXNet's .params format: MXNet-written fixtures, byte equality, round trips, corrupt files."""
import os
import struct
import subprocess
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ember.base import FormatError
from ember.imperative import serialization as ser

FIXTURES = os.path.join(os.path.dirname(__file__), os.pardir, "data", "params")
MXNET_PYTHON = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")
ALL_FIXTURES = ["list_float32", "dict_dtypes", "checkpoint_style", "empty_list", "zero_size",
                "single_array", "sparse", "big_float32", "np_shape"]
DENSE_FIXTURES = [f for f in ALL_FIXTURES if f != "sparse"]
WRITABLE = [np.float32, np.float64, np.float16, np.uint8, np.int8, np.int32, np.int64, np.bool_]


def fixture_bytes(name):
    with open(os.path.join(FIXTURES, name + ".params"), "rb") as f:
        return f.read()


def expected(name):
    """What MXNet read back from its own file: a list, or a dict in the file's key order."""
    with np.load(os.path.join(FIXTURES, name + ".npz")) as npz:
        values = {k: npz[k] for k in npz.files}
    keys_path = os.path.join(FIXTURES, name + ".keys.txt")
    if os.path.exists(keys_path):
        with open(keys_path, encoding="utf-8") as f:
            return {k: values[k] for k in f.read().splitlines()}
    return [values[f"arr_{i}"] for i in range(len(values))]


def assert_same(got, want):
    assert type(got) is type(want)
    if isinstance(want, dict):
        assert list(got) == list(want)
        got, want = list(got.values()), list(want.values())
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------- files written by MXNet 1.9.1

@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_mxnet_fixture_loads_with_right_values(name):
    want = expected(name)
    assert_same(ser.loads(fixture_bytes(name)), want)
    assert_same(ser.load_numpy(os.path.join(FIXTURES, name + ".params")), want)


def test_sparse_fixture_densifies():
    got = ser.loads(fixture_bytes("sparse"))
    np.testing.assert_array_equal(got["row_sparse"], [[1, 2], [0, 0], [3, 4], [0, 0]])
    np.testing.assert_array_equal(got["csr"], [[1, 0, 0], [0, 0, 0], [3, 0, 4]])
    np.testing.assert_array_equal(got["empty_row_sparse"], np.zeros((3, 2), np.float32))


@pytest.mark.parametrize("name", DENSE_FIXTURES)
def test_ember_bytes_equal_mxnet_bytes(name):
    data = expected(name)
    if name == "single_array":
        data = data[0]  # mx.nd.save(fname, ndarray) writes a one-element list
    assert ser.dumps(data) == fixture_bytes(name)


def test_loads_accepts_any_byte_buffer():
    raw = fixture_bytes("list_float32")
    for buf in (bytearray(raw), memoryview(raw), np.frombuffer(raw, np.uint8)):
        assert_same(ser.loads(buf if not isinstance(buf, np.ndarray) else memoryview(buf)), expected("list_float32"))


def test_save_numpy_writes_the_same_bytes(tmp_path):
    data = expected("dict_dtypes")
    ser.save_numpy(tmp_path / "x.params", data)
    assert (tmp_path / "x.params").read_bytes() == fixture_bytes("dict_dtypes")


# ---------------------------------------------------------------- round trips

arrays = st.sampled_from(WRITABLE).flatmap(
    lambda dt: st.lists(st.integers(0, 4), min_size=1, max_size=4).map(
        lambda shape: np.random.default_rng(sum(shape)).normal(size=shape).astype(dt) * 7))


@settings(max_examples=60, deadline=None)
@given(st.lists(arrays, max_size=5))
def test_list_round_trip(values):
    assert_same(ser.loads(ser.dumps(values)), values)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.text(max_size=12), arrays, min_size=1, max_size=4))
def test_dict_round_trip(values):
    assert_same(ser.loads(ser.dumps(values)), values)


def test_empty_dict_loads_as_empty_list_like_mxnet():
    assert ser.dumps({}) == ser.dumps([]) == fixture_bytes("empty_list")
    assert ser.loads(ser.dumps({})) == []


def test_scalars_zero_size_and_none_round_trip():
    values = {"scalar": np.float64(2.5) * np.ones(()), "empty": np.zeros((3, 0), np.int8),
              "absent": None, "vector": np.arange(3, dtype=np.int64)}
    raw = ser.dumps(values)
    assert struct.unpack_from("<I", raw, 24)[0] == ser.V3_MAGIC  # 0-d needs NumPy shape records
    back = ser.loads(raw)
    assert back["absent"] is None and back["scalar"].shape == () and back["scalar"] == 2.5
    assert back["empty"].shape == (3, 0) and back["empty"].dtype == np.int8
    legacy = ser.loads(ser.dumps([None, np.ones(2, np.float32)]))
    assert legacy[0] is None and legacy[1].tolist() == [1, 1]


def test_non_contiguous_and_big_endian_inputs():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    back = ser.loads(ser.dumps([base[:, ::2], base.T, base.astype(">f4")]))
    np.testing.assert_array_equal(back[0], base[:, ::2])
    np.testing.assert_array_equal(back[1], base.T)
    assert back[2].dtype == np.dtype("<f4")
    np.testing.assert_array_equal(back[2], base)


def test_legacy_and_v1_records():
    values = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    header = struct.pack("<QQQ", ser.LIST_MAGIC, 0, 2)
    legacy = struct.pack("<I2I", 2, 2, 3) + struct.pack("<iii", 1, 0, 0) + values.tobytes()
    v1 = struct.pack("<Ii2q", ser.V1_MAGIC, 2, 2, 3) + struct.pack("<iii", 1, 0, 0) + values.tobytes()
    got = ser.loads(header + legacy + v1 + struct.pack("<Q", 0))
    for array in got:
        np.testing.assert_array_equal(array, values)


def test_bfloat16_loads_as_float32():
    want = np.array([1.5, -2.25, 2.0 ** 120, 0.0], dtype=np.float32)
    bits = (want.view(np.uint32) >> 16).astype("<u2")
    record = struct.pack("<Iiiqiii", ser.V2_MAGIC, 0, 1, 4, 1, 0, ser.BFLOAT16_FLAG) + bits.tobytes()
    got = ser.loads(struct.pack("<QQQ", ser.LIST_MAGIC, 0, 1) + record + struct.pack("<Q", 0))[0]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)  # these values are exact in bfloat16


def test_gpu_device_records_load_on_cpu():
    raw = bytearray(ser.dumps([np.arange(3, dtype=np.int32)]))
    struct.pack_into("<ii", raw, 24 + 4 + 4 + 4 + 8, 2, 1)  # device: gpu(1)
    np.testing.assert_array_equal(ser.loads(bytes(raw))[0], [0, 1, 2])


# ---------------------------------------------------------------- NDArray API

def test_ndarray_save_and_load(tmp_path):
    from ember.imperative import NDArray, array
    weights = {"w": array(np.arange(6).reshape(2, 3), dtype=np.float32), "b": array(np.ones(2), dtype=np.int64)}
    ser.save(tmp_path / "m.params", weights)
    back = ser.load(tmp_path / "m.params")
    assert list(back) == ["w", "b"] and all(isinstance(v, NDArray) for v in back.values())
    assert back["b"].dtype == np.int64 and str(back["w"].context) == "cpu(0)"
    np.testing.assert_array_equal(back["w"].asnumpy(), np.arange(6).reshape(2, 3))
    ser.save(tmp_path / "one.params", weights["w"])
    (one,) = ser.load(tmp_path / "one.params")
    np.testing.assert_array_equal(one.asnumpy(), weights["w"].asnumpy())
    from_buffer = ser.load_frombuffer((tmp_path / "m.params").read_bytes())
    np.testing.assert_array_equal(from_buffer["b"].asnumpy(), [1, 1])


def test_ndarray_save_matches_mxnet_bytes(tmp_path):
    from ember.imperative import array
    want = expected("checkpoint_style")
    ser.save(tmp_path / "c.params", {k: array(v, dtype=v.dtype) for k, v in want.items()})
    assert (tmp_path / "c.params").read_bytes() == fixture_bytes("checkpoint_style")


# ---------------------------------------------------------------- bad inputs

def test_bad_data_to_save():
    with pytest.raises(TypeError, match="keys must be str"):
        ser.dumps({1: np.zeros(2)})
    with pytest.raises(TypeError, match="cannot save dtype complex64"):
        ser.dumps([np.zeros(2, np.complex64)])
    with pytest.raises(TypeError, match=r"data\[1\] must be a numpy array"):
        ser.dumps([np.zeros(1), [1, 2]])
    with pytest.raises(ValueError, match="0-d array can only be saved with np_shape=True"):
        ser.dumps([np.float32(1) * np.ones(())], np_shape=False)
    with pytest.raises(TypeError, match="must be an NDArray"):
        ser.save("/nonexistent/never-written.params", ["text"])
    with pytest.raises(TypeError, match="expects bytes"):
        ser.loads("not bytes")


def test_every_truncation_is_a_format_error():
    raw = fixture_bytes("dict_dtypes")
    for cut in range(len(raw)):
        with pytest.raises(FormatError):
            ser.loads(raw[:cut])


def test_truncated_file_on_disk(tmp_path):
    path = tmp_path / "cut.params"
    path.write_bytes(fixture_bytes("big_float32")[:20000])
    with pytest.raises(FormatError, match="truncated NDArray file: array 0 values needs 25600 bytes"):
        ser.load_numpy(path)


def _dense_file(shape_bytes, flag=0, payload=b"", stype=0, dev=1):
    return (struct.pack("<QQQ", ser.LIST_MAGIC, 0, 1) + struct.pack("<Ii", ser.V2_MAGIC, stype)
            + shape_bytes + struct.pack("<iii", dev, 0, flag) + payload + struct.pack("<Q", 0))


@pytest.mark.parametrize("raw,message", [
    (b"GARBAGE!" * 4, "not an MXNet NDArray file: header 0x2145474142524147"),
    (struct.pack("<QQQ", ser.LIST_MAGIC, 0, 1 << 60), "array count is 1152921504606846976"),
    (_dense_file(struct.pack("<iq", 1, 1 << 40)), "array 0 values needs 4398046511104 bytes"),
    (_dense_file(struct.pack("<i", 1 << 30)), "array 0 shape has ndim 1073741824"),
    (_dense_file(struct.pack("<iq", 1, -5)), "negative dimension"),
    (_dense_file(struct.pack("<i3q", 3, 0, 1 << 40, 1 << 40)), r"\(0, 1099511627776, 1099511627776\) is too large"),
    (_dense_file(struct.pack("<iq", 1, 1), flag=99, payload=b"\0" * 4), "unknown dtype flag 99"),
    (_dense_file(struct.pack("<iq", 1, 1), payload=b"\0" * 4, dev=9), "unknown device type 9"),
    (_dense_file(struct.pack("<iq", 1, 1), stype=7), "unknown storage type 7"),
    (struct.pack("<QQQ", ser.LIST_MAGIC, 0, 1) + struct.pack("<I", 0x7FFFFFFF), "neither a known record magic"),
    (struct.pack("<QQQQ", ser.LIST_MAGIC, 0, 0, 1 << 50), "name count is 1125899906842624"),
])
def test_corrupt_files_name_the_problem(raw, message):
    with pytest.raises(FormatError, match=message):
        ser.loads(raw)


def test_name_count_and_encoding_checks():
    one = ser.dumps([np.zeros(1, np.float32)])
    two_names = one[:-8] + struct.pack("<Q", 2) + (struct.pack("<Q", 1) + b"a") * 2
    with pytest.raises(FormatError, match="2 names for 1 arrays"):
        ser.loads(two_names)
    bad_utf8 = one[:-8] + struct.pack("<QQ", 1, 1) + b"\xff"
    with pytest.raises(FormatError, match="name 0 is not UTF-8"):
        ser.loads(bad_utf8)


def test_huge_sparse_shape_is_refused_before_densifying():
    raw = bytearray(fixture_bytes("sparse"))
    # the row_sparse record's dense shape (4, 2) follows its storage shape: make it (2**40, 2)
    shape_offset = raw.index(struct.pack("<iqq", 2, 4, 2))
    struct.pack_into("<q", raw, shape_offset + 4, 1 << 40)
    with pytest.raises(FormatError, match="row_sparse array of shape .1099511627776, 2.: dense it would need"):
        ser.loads(bytes(raw))


def test_inconsistent_sparse_records():
    raw = bytearray(fixture_bytes("sparse"))
    # first record is row_sparse with row indices [0, 2]: point the second index past the 4 rows
    index_offset = raw.index(struct.pack("<qq", 0, 2))
    struct.pack_into("<q", raw, index_offset + 8, 9)
    with pytest.raises(FormatError, match="row index out of range"):
        ser.loads(bytes(raw))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_random_corruption_never_escapes_format_error(data):
    raw = bytearray(fixture_bytes(data.draw(st.sampled_from(["dict_dtypes", "sparse", "np_shape"]))))
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        ser.loads(bytes(raw))
    except FormatError:
        pass


# ---------------------------------------------------------------- the other direction: MXNet reads ember files

@pytest.mark.skipif(not os.path.exists(MXNET_PYTHON), reason="MXNet 1.9.1 venv not installed")
def test_real_mxnet_loads_ember_files(tmp_path):
    rng = np.random.default_rng(3)
    cases = {
        "dict": {f"p{i}": (rng.normal(size=(2, 3)) * 50).astype(dt) for i, dt in enumerate(WRITABLE)},
        "list": [rng.normal(size=(4,)).astype(np.float32), np.zeros((0, 2), np.int32)],
    }
    for name, data in cases.items():
        ser.save_numpy(tmp_path / f"{name}.params", data)
        np.savez(tmp_path / f"{name}.npz", **data) if isinstance(data, dict) else np.savez(tmp_path / f"{name}.npz", *data)
    ser.save_numpy(tmp_path / "np.params", {"s": np.float32(4) * np.ones((), np.float32)})
    script = textwrap.dedent(f"""
        import mxnet as mx, numpy as np
        d = mx.nd.load({str(tmp_path / 'dict.params')!r}); e = np.load({str(tmp_path / 'dict.npz')!r})
        assert list(d) == ['p%d' % i for i in range(8)], list(d)
        for k in d: assert d[k].dtype == e[k].dtype and (d[k].asnumpy() == e[k]).all(), k
        l = mx.nd.load({str(tmp_path / 'list.params')!r}); e = np.load({str(tmp_path / 'list.npz')!r})
        assert isinstance(l, list) and len(l) == 2
        for i, a in enumerate(l): assert a.shape == e['arr_%d' % i].shape and (a.asnumpy() == e['arr_%d' % i]).all()
        mx.npx.set_np()
        s = mx.npx.load({str(tmp_path / 'np.params')!r})['s']
        assert s.shape == () and float(s) == 4.0
        print('MXNET-OK')
    """)
    proc = subprocess.run([MXNET_PYTHON, "-c", script], capture_output=True, text=True, timeout=240)
    assert "MXNET-OK" in proc.stdout, proc.stderr[-3000:]
