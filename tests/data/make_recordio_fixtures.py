"""Writes RecordIO fixtures with real MXNet 1.9.1 (run with the MXNet venv):

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_recordio_fixtures.py

tests/data/recordio/mxnet.rec + mxnet.idx: MXIndexedRecordIO records with keys 0..N-1, payloads
from numpy.random.RandomState(7) of varied lengths (0, 1, 2, 3, 4, ... bytes: every padding case),
payloads holding the RecordIO magic word at aligned and unaligned offsets (split records), and
`recordio.pack`ed records (scalar and array labels).  mxnet_expected.npz holds what MXNet reads
back for every key (payload bytes as uint8 arrays), so tests need no MXNet.
"""
import os
import struct

import mxnet as mx
import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recordio")
MAGIC = struct.pack("<I", 0xced7230a)


def payloads():
    rs = np.random.RandomState(7)
    out = [rs.randint(0, 256, size=n).astype(np.uint8).tobytes() for n in (0, 1, 2, 3, 4, 5, 7, 8, 33)]
    out.append(MAGIC)                                   # the whole payload is the magic word
    out.append(b"abcd" + MAGIC + b"efgh" + MAGIC + b"xy")  # two aligned magic words: 3 parts
    out.append(b"a" + MAGIC + b"bcd")                   # unaligned: written whole
    out.append(MAGIC + MAGIC)                           # empty first and middle parts
    out.append(mx.recordio.pack(mx.recordio.IRHeader(0, 3.5, 17, 0), b"payload"))
    out.append(mx.recordio.pack(mx.recordio.IRHeader(0, [1.0, 2.5, -3.0], 18, 4), b"xyz"))
    return out


def main():
    os.makedirs(HERE, exist_ok=True)
    rec, idx = os.path.join(HERE, "mxnet.rec"), os.path.join(HERE, "mxnet.idx")
    items = payloads()
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i, p in enumerate(items):
        w.write_idx(i, p)
    w.close()
    r = mx.recordio.MXIndexedRecordIO(idx, rec, "r")
    read = {f"key{k}": np.frombuffer(r.read_idx(k), dtype=np.uint8) for k in r.keys}
    r.close()
    h, s = mx.recordio.unpack(items[-1])
    np.savez(os.path.join(HERE, "mxnet_expected.npz"), **read,
             unpack_label=np.asarray(h.label), unpack_header=np.array([h.flag, h.id, h.id2]),
             unpack_payload=np.frombuffer(s, np.uint8))
    print("wrote", rec, os.path.getsize(rec), "bytes,", len(items), "records")


if __name__ == "__main__":
    main()
