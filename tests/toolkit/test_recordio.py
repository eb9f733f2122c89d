"""mx.recordio: reads MXNet 1.9.1-written .rec/.idx files byte for byte, writes files MXNet reads."""
import os
import pickle
import struct
import subprocess
import textwrap

import numpy as np
import pytest

import ember as mx

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "data", "recordio")
MXNET_PYTHON = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")
MAGIC = struct.pack("<I", 0xced7230a)


def _fixture_payloads():
    # the same payloads tests/data/make_recordio_fixtures.py gave MXNet
    rs = np.random.RandomState(7)
    out = [rs.randint(0, 256, size=n).astype(np.uint8).tobytes() for n in (0, 1, 2, 3, 4, 5, 7, 8, 33)]
    out += [MAGIC, b"abcd" + MAGIC + b"efgh" + MAGIC + b"xy", b"a" + MAGIC + b"bcd", MAGIC + MAGIC]
    out.append(mx.recordio.pack(mx.recordio.IRHeader(0, 3.5, 17, 0), b"payload"))
    out.append(mx.recordio.pack(mx.recordio.IRHeader(0, [1.0, 2.5, -3.0], 18, 4), b"xyz"))
    return out


def test_reads_mxnet_written_file():
    expected = np.load(os.path.join(FIX, "mxnet_expected.npz"))
    r = mx.recordio.MXIndexedRecordIO(os.path.join(FIX, "mxnet.idx"), os.path.join(FIX, "mxnet.rec"), "r")
    assert r.keys == list(range(15))
    for k in reversed(r.keys):  # random access through the index
        assert r.read_idx(k) == expected[f"key{k}"].tobytes()
    r.close()
    seq = mx.recordio.MXRecordIO(os.path.join(FIX, "mxnet.rec"), "r")
    got = []
    while True:
        item = seq.read()
        if item is None:
            break
        got.append(item)
    assert got == _fixture_payloads()
    seq.reset()
    assert seq.read() == got[0]


def test_writes_byte_identical_files(tmp_path):
    rec, idx = str(tmp_path / "e.rec"), str(tmp_path / "e.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i, p in enumerate(_fixture_payloads()):
        w.write_idx(i, p)
    w.close()
    with open(rec, "rb") as a, open(os.path.join(FIX, "mxnet.rec"), "rb") as b:
        assert a.read() == b.read()
    with open(idx) as a, open(os.path.join(FIX, "mxnet.idx")) as b:
        assert a.read() == b.read()


def test_split_record_layout(tmp_path):
    # an aligned magic word splits the record: parts with cflag 1 and 3, magic words dropped
    path = str(tmp_path / "s.rec")
    w = mx.recordio.MXRecordIO(path, "w")
    w.write(b"abcd" + MAGIC + b"ef")
    w.close()
    raw = open(path, "rb").read()
    assert raw == (MAGIC + struct.pack("<I", (1 << 29) | 4) + b"abcd"
                   + MAGIC + struct.pack("<I", (3 << 29) | 2) + b"ef\0\0")
    r = mx.recordio.MXRecordIO(path, "r")
    assert r.read() == b"abcd" + MAGIC + b"ef"
    assert r.read() is None


def test_pack_unpack():
    s = mx.recordio.pack(mx.recordio.IRHeader(0, 2.0, 5, 9), b"data")
    h, payload = mx.recordio.unpack(s)
    assert (h.flag, h.label, h.id, h.id2, payload) == (0, 2.0, 5, 9, b"data")
    h, payload = mx.recordio.unpack(mx.recordio.pack((0, [1, 2, 3], 1, 0), b"z"))
    assert h.flag == 3 and payload == b"z"
    np.testing.assert_array_equal(h.label, np.array([1, 2, 3], np.float32))
    expected = np.load(os.path.join(FIX, "mxnet_expected.npz"))
    h, payload = mx.recordio.unpack(expected["key14"].tobytes())
    np.testing.assert_array_equal(h.label, expected["unpack_label"])
    assert [h.flag, h.id, h.id2] == list(expected["unpack_header"]) and payload == b"xyz"
    with pytest.raises(ValueError):
        mx.recordio.unpack(b"short")


def test_errors_and_pickle(tmp_path):
    with pytest.raises(ValueError, match="Invalid flag"):
        mx.recordio.MXRecordIO(str(tmp_path / "x.rec"), "a")
    with pytest.raises(mx.base.MXNetError, match="no such file"):
        mx.recordio.MXRecordIO(str(tmp_path / "missing.rec"), "r")
    bad = tmp_path / "bad.rec"
    bad.write_bytes(b"\1\2\3\4\5\6\7\10")
    with pytest.raises(mx.base.MXNetError, match="magic"):
        mx.recordio.MXRecordIO(str(bad), "r").read()
    r = mx.recordio.MXIndexedRecordIO(os.path.join(FIX, "mxnet.idx"), os.path.join(FIX, "mxnet.rec"), "r")
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.read_idx(8) == r.read_idx(8) and r2.keys == r.keys
    with pytest.raises(KeyError):
        r.read_idx(99)


def test_image_records(tmp_path):
    pytest.importorskip("PIL")
    img = np.zeros((6, 8, 3), np.uint8)
    img[:, :, 0] = 200  # blue in OpenCV's BGR order
    s = mx.recordio.pack_img(mx.recordio.IRHeader(0, 1.0, 0, 0), img, img_fmt=".png")
    h, out = mx.recordio.unpack_img(s)
    np.testing.assert_array_equal(out, img)  # PNG is lossless; channel order kept as BGR
    s = mx.recordio.pack_img(mx.recordio.IRHeader(0, 1.0, 0, 0), img, quality=95, img_fmt=".jpg")
    _, out = mx.recordio.unpack_img(s)
    assert out.shape == img.shape and np.abs(out.astype(int) - img).max() <= 3


@pytest.mark.skipif(not os.path.exists(MXNET_PYTHON), reason="MXNet 1.9.1 venv not available")
def test_mxnet_reads_ember_files(tmp_path):
    rec, idx = str(tmp_path / "e.rec"), str(tmp_path / "e.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    payloads = _fixture_payloads() + [b"x" * 1001, MAGIC * 3 + b"q"]
    for i, p in enumerate(payloads):
        w.write_idx(i, p)
    w.close()
    np.savez(str(tmp_path / "want.npz"), *[np.frombuffer(p, np.uint8) for p in payloads])
    script = textwrap.dedent(f"""
        import mxnet as mx, numpy as np
        want = np.load({str(tmp_path / 'want.npz')!r})
        r = mx.recordio.MXIndexedRecordIO({idx!r}, {rec!r}, 'r')
        for k in reversed(r.keys):
            assert r.read_idx(k) == want['arr_%d' % k].tobytes(), k
        print('OK', len(r.keys))
    """)
    out = subprocess.run([MXNET_PYTHON, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"OK {len(payloads)}" in out.stdout
