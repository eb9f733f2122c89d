"""MXNet's binary NDArray list format (`.params` files): `mx.nd.save` / `mx.nd.load`.

Layout (all integers little-endian), as written by MXNet 1.x `NDArray::Save`:

    u64 0x112 (list magic)   u64 reserved (0)
    u64 n, then n array records
    u64 k (0 for a list, n for a dict), then k names: u64 length + UTF-8 bytes

An array record:

    u32 magic   0xF993FAC9 (v2) | 0xF993FACA (v3: NumPy shape semantics, allows 0-d)
                | 0xF993FAC8 (v1) | anything else: legacy, the value is ndim
    i32 storage type (0 dense, 1 row_sparse, 2 csr)          [v2/v3]
    shape of the stored values if sparse                      [v2/v3]
    shape: i32 ndim + ndim x i64 (legacy: ndim x u32)
        an absent ("none") array ends here: ndim 0 (v2) or unknown ndim/dim -1 (v3)
    i32 device type, i32 device id
    i32 dtype flag (0 f32, 1 f64, 2 f16, 3 u8, 4 i32, 5 i8, 6 i64, 7 bool, 12 bf16, ...)
    per auxiliary array of a sparse record: i32 dtype flag + shape
    raw values, then raw auxiliary arrays (row indices / csr indptr and indices)

`dumps`/`loads` work on numpy arrays; `save`/`load` on ember NDArrays.  Sparse
records load as CSRNDArray/RowSparseNDArray through `load` (and are written by `save`),
as dense numpy arrays through `loads`; bfloat16 records as float32 (numpy has no bfloat16),
absent arrays as None.  Every length read from a file is checked against the bytes
that remain before anything is allocated, so a corrupt file raises FormatError
instead of a huge allocation.
"""
from __future__ import annotations

import io
import math
import os
import struct
from typing import BinaryIO, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ..base import FormatError, MissingFileError

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA
MAX_NDIM = 64  # numpy's limit; a legacy record's magic above this is not a plausible ndim
# Sparse records are densified (ember has no sparse storage), and a sparse record's dense
# size is not bounded by the file's length: cap it so a corrupt shape cannot allocate wildly.
MAX_DENSIFIED_BYTES = 1 << 31

DENSE, ROW_SPARSE, CSR = 0, 1, 2
_AUX_COUNT = {DENSE: 0, ROW_SPARSE: 1, CSR: 2}

BFLOAT16_FLAG = 12
# mshadow type flags; MXNet 1.x's Python side reads and writes flags 0-7 and 12.
_FLAG_TO_DTYPE = {
    0: np.dtype("<f4"), 1: np.dtype("<f8"), 2: np.dtype("<f2"), 3: np.dtype("u1"),
    4: np.dtype("<i4"), 5: np.dtype("i1"), 6: np.dtype("<i8"), 7: np.dtype("?"),
    8: np.dtype("<i2"), 9: np.dtype("<u2"), 10: np.dtype("<u4"), 11: np.dtype("<u8"),
    BFLOAT16_FLAG: np.dtype("<u2"),  # raw bits, widened to float32 after reading
}
_WRITABLE_FLAGS = {_FLAG_TO_DTYPE[flag]: flag for flag in range(8)}  # what MXNet's Python can read
_DEVICE_TYPES = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}

Device = Tuple[int, int]  # (MXNet device type id, device id)
CPU0: Device = (1, 0)
Arrays = Union[np.ndarray, Sequence[Optional[np.ndarray]], Dict[str, Optional[np.ndarray]]]


# ----------------------------------------------------------------------------- reading

class _Reader:
    """Reads a byte stream whose total size is known, refusing to read past its end."""

    def __init__(self, stream: BinaryIO, size: int):
        self._stream = stream
        self.pos = 0
        self.size = size

    @property
    def remaining(self) -> int:
        return self.size - self.pos

    def _truncated(self, nbytes: int, what: str) -> FormatError:
        return FormatError(f"truncated NDArray file: {what} needs {nbytes} bytes at offset "
                           f"{self.pos} but only {self.remaining} remain")

    def take(self, nbytes: int, what: str) -> bytes:
        if nbytes > self.remaining:
            raise self._truncated(nbytes, what)
        raw = self._stream.read(nbytes)
        if len(raw) != nbytes:  # the file shrank under us
            raise self._truncated(nbytes, what)
        self.pos += nbytes
        return raw

    def unpack(self, fmt: str, what: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def array(self, dtype: np.dtype, count: int, what: str) -> np.ndarray:
        nbytes = count * dtype.itemsize
        if nbytes > self.remaining:
            raise self._truncated(nbytes, what)
        out = np.empty(count, dtype=dtype)
        got = self._stream.readinto(memoryview(out).cast("B")) if nbytes else 0
        if got != nbytes:
            raise self._truncated(nbytes, what)
        self.pos += nbytes
        return out

    def count(self, item_min_bytes: int, what: str) -> int:
        """A u64 element count, checked against what the remaining bytes could hold."""
        n = self.unpack("<Q", what)
        if n * item_min_bytes > self.remaining:
            raise FormatError(f"corrupt NDArray file: {what} is {n} at offset {self.pos - 8}, "
                              f"but only {self.remaining} bytes remain")
        return n


def _read_shape(r: _Reader, what: str, np_shape: bool) -> Optional[Tuple[int, ...]]:
    """A TShape (i32 ndim + i64 dims); None when the shape is unknown (an absent array)."""
    ndim = r.unpack("<i", f"{what} ndim")
    if ndim == -1 and np_shape:
        return None
    if ndim < 0 or ndim > MAX_NDIM:
        raise FormatError(f"corrupt NDArray file: {what} has ndim {ndim} at offset {r.pos - 4}")
    dims = struct.unpack(f"<{ndim}q", r.take(ndim * 8, f"{what} dims"))
    if np_shape and -1 in dims:
        return None
    if any(d < 0 for d in dims):
        raise FormatError(f"corrupt NDArray file: {what} has negative dimension in {dims}")
    _check_extent(dims, what)
    return dims


def _check_extent(dims: Tuple[int, ...], what: str) -> None:
    # A zero dim makes any other dim fit in the file, but numpy still refuses shapes
    # whose non-zero dims multiply past its index range.
    extent = 1
    for d in dims:
        extent *= d or 1
    if extent >= 1 << 60:
        raise FormatError(f"corrupt NDArray file: {what} {dims} is too large for any array")


def _read_legacy_shape(r: _Reader, ndim: int, what: str) -> Tuple[int, ...]:
    if ndim > MAX_NDIM:
        raise FormatError(f"not an NDArray record: {what} starts with 0x{ndim:08x}, which is "
                          f"neither a known record magic nor a plausible legacy ndim")
    dims = struct.unpack(f"<{ndim}I", r.take(ndim * 4, f"{what} legacy dims"))
    _check_extent(dims, f"{what} shape")
    return dims


def _read_dtype(r: _Reader, what: str) -> Tuple[int, np.dtype]:
    flag = r.unpack("<i", f"{what} dtype flag")
    dtype = _FLAG_TO_DTYPE.get(flag)
    if dtype is None:
        raise FormatError(f"corrupt NDArray file: {what} has unknown dtype flag {flag}")
    return flag, dtype


def _read_device(r: _Reader, what: str) -> Device:
    dev_type = r.unpack("<i", f"{what} device type")
    dev_id = r.unpack("<i", f"{what} device id")
    if dev_type not in _DEVICE_TYPES:
        raise FormatError(f"corrupt NDArray file: {what} has unknown device type {dev_type}")
    return dev_type, dev_id


def _read_values(r: _Reader, flag: int, dtype: np.dtype, shape: Tuple[int, ...], what: str) -> np.ndarray:
    values = r.array(dtype, math.prod(shape), f"{what} values").reshape(shape)
    if flag == BFLOAT16_FLAG:  # bfloat16 is the top half of a float32
        values = (values.astype(np.uint32) << 16).view(np.float32)
    return values


def _check_row_sparse(shape, values, row_idx, what: str) -> None:
    if values.shape[1:] != tuple(shape[1:]) or row_idx.shape != values.shape[:1]:
        raise FormatError(f"corrupt NDArray file: {what} row_sparse values {values.shape} and "
                          f"{row_idx.shape[0]} row indices do not fit shape {shape}")
    if row_idx.size and (row_idx.min() < 0 or row_idx.max() >= shape[0]):
        raise FormatError(f"corrupt NDArray file: {what} row index out of range for shape {shape}")


def _check_csr(shape, values, indptr, indices, what: str) -> None:
    if len(shape) != 2:
        raise FormatError(f"corrupt NDArray file: {what} is csr but has shape {shape} (needs 2-D)")
    rows, cols = shape
    nnz = values.shape[0] if values.ndim == 1 else -1
    if (indptr.shape != (rows + 1,) or indices.shape != (nnz,) or indptr[0] != 0
            or indptr[-1] != nnz or (np.diff(indptr) < 0).any()
            or (nnz and (indices.min() < 0 or indices.max() >= cols))):
        raise FormatError(f"corrupt NDArray file: {what} csr indptr/indices are inconsistent "
                          f"with shape {shape} and {nnz} stored values")


def _densify(stype: str, shape, values, aux, what: str) -> np.ndarray:
    """The dense array of a checked sparse record (within MAX_DENSIFIED_BYTES)."""
    nbytes = math.prod(shape) * values.dtype.itemsize
    if nbytes > MAX_DENSIFIED_BYTES:
        raise FormatError(f"{what} is a {stype} array of shape {shape}: dense it would need {nbytes} bytes, "
                          f"over serialization.MAX_DENSIFIED_BYTES={MAX_DENSIFIED_BYTES} (ember loads "
                          "sparse arrays densely); the shape is corrupt or the array too large")
    from .sparse_ndarray import csr_to_dense, row_sparse_to_dense
    if stype == "row_sparse":
        return row_sparse_to_dense(values, aux[0], shape)
    return csr_to_dense(values, aux[0], aux[1], shape)


class SparseRecord(NamedTuple):
    """A sparse array read from a file: storage type name, dense shape, values, aux arrays (MXNet's order:
    csr indptr then indices; row_sparse row indices)."""
    stype: str
    shape: Tuple[int, ...]
    values: np.ndarray
    aux: Tuple[np.ndarray, ...]


def _check_shape_semantics(saved_np_shape: bool) -> None:
    """mx.nd.load's rule: a record is read under the shape semantics it was written in (MXNet 1.x's
    v2 records treat 0 as unknown, v3 records as a real size), except that global NumPy shape
    semantics also reads v2 records."""
    from ..base import MXNetError
    from .. import util
    on = util.is_np_shape()
    if saved_np_shape and not on:
        raise MXNetError("ndarray was saved in np shape semantics, must be loaded in the same semantics. "
                         "Please turn on np shape semantics in Python using `with np_shape(True)` or "
                         "decorator `use_np_shape` to scope the code of loading the ndarray.")
    if not saved_np_shape and on and not util._np_shape_global:
        raise MXNetError("ndarray was not saved in np shape semantics, but being loaded in np shape "
                         "semantics. Please turn off np shape semantics in Python using `with "
                         "np_shape(False)` to scope the code of loading the ndarray.")


def _read_record(r: _Reader, index: int, keep_sparse: bool = False, check_semantics: bool = False
                 ) -> Union[None, np.ndarray, SparseRecord]:
    what = f"array {index}"
    magic = r.unpack("<I", f"{what} magic")
    if magic in (V2_MAGIC, V3_MAGIC):
        np_shape = magic == V3_MAGIC
        if check_semantics:
            _check_shape_semantics(np_shape)
        stype = r.unpack("<i", f"{what} storage type")
        if stype not in _AUX_COUNT:
            raise FormatError(f"corrupt NDArray file: {what} has unknown storage type {stype}")
        n_aux = _AUX_COUNT[stype]
        storage_shape = _read_shape(r, f"{what} storage shape", np_shape) if n_aux else None
        shape = _read_shape(r, f"{what} shape", np_shape)
        if shape is None or (not np_shape and len(shape) == 0):
            return None
    else:
        if magic == V1_MAGIC:
            shape = _read_shape(r, f"{what} shape", False)
        else:
            shape = _read_legacy_shape(r, magic, what)
        if len(shape) == 0:
            return None
        stype, n_aux, storage_shape = DENSE, 0, None
    _read_device(r, what)  # arrays always load on the CPU
    flag, dtype = _read_dtype(r, what)
    aux = []
    for i in range(n_aux):
        aux_flag, aux_dtype = _read_dtype(r, f"{what} aux {i}")
        aux_shape = _read_shape(r, f"{what} aux {i} shape", False)
        if aux_shape is None or len(aux_shape) != 1 or aux_dtype.kind not in "iu":
            raise FormatError(f"corrupt NDArray file: {what} aux {i} must be a 1-D integer index array")
        aux.append((aux_dtype, aux_shape))
    if n_aux == 0:
        return _read_values(r, flag, dtype, shape, what)
    if math.prod(storage_shape) == 0:
        # MXNet may record an empty storage shape; like its sparse constructor, take the
        # stored rows (row_sparse) or values (csr) from the index array's length instead
        idx_shape = aux[0][1] if stype == ROW_SPARSE else aux[1][1]
        storage_shape = (idx_shape[0],) + tuple(shape[1:]) if stype == ROW_SPARSE else idx_shape
    values = _read_values(r, flag, dtype, storage_shape, what)
    aux_arrays = [r.array(d, math.prod(s), f"{what} aux {i} values").reshape(s) for i, (d, s) in enumerate(aux)]
    (_check_row_sparse if stype == ROW_SPARSE else _check_csr)(shape, values, *aux_arrays, what)
    stype_name = "row_sparse" if stype == ROW_SPARSE else "csr"
    if keep_sparse:
        return SparseRecord(stype_name, tuple(shape), values, tuple(aux_arrays))
    return _densify(stype_name, shape, values, aux_arrays, what)


def _read_file(r: _Reader, keep_sparse: bool = False, check_semantics: bool = False
               ) -> Union[List[Optional[np.ndarray]], Dict[str, Optional[np.ndarray]]]:
    magic = r.unpack("<Q", "list magic")
    if magic != LIST_MAGIC:
        raise FormatError(f"not an MXNet NDArray file: header 0x{magic:x}, expected 0x{LIST_MAGIC:x}")
    r.unpack("<Q", "reserved header field")
    n = r.count(4, "array count")  # the shortest record (legacy, ndim 0) is 4 bytes
    arrays = [_read_record(r, i, keep_sparse, check_semantics) for i in range(n)]
    k = r.count(8, "name count")
    if k not in (0, n):
        raise FormatError(f"corrupt NDArray file: {k} names for {n} arrays")
    names = []
    for i in range(k):
        length = r.count(1, f"length of name {i}")
        raw = r.take(length, f"name {i}")
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise FormatError(f"corrupt NDArray file: name {i} is not UTF-8 ({e})") from None
    if not names:
        return arrays
    return dict(zip(names, arrays))


def loads(buf: Union[bytes, bytearray, memoryview], keep_sparse: bool = False
          ) -> Union[List[Optional[np.ndarray]], Dict[str, Optional[np.ndarray]]]:
    """Decode an NDArray file held in memory: a list of numpy arrays, or a dict if it has names.

    Sparse records are densified, or kept as `SparseRecord`s with keep_sparse=True."""
    return _read_file(_bytes_reader(buf, "loads"), keep_sparse)


def _bytes_reader(buf: Union[bytes, bytearray, memoryview], caller: str) -> _Reader:
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError(f"{caller}() expects bytes, not {type(buf).__name__}")
    # BytesIO shares a bytes object's buffer (no copy); other buffers are copied once
    data = buf if isinstance(buf, bytes) else memoryview(buf).cast("B").tobytes()
    return _Reader(io.BytesIO(data), len(data))


def _file_reader(f: BinaryIO) -> _Reader:
    return _Reader(f, os.fstat(f.fileno()).st_size)


def load_numpy(fname: Union[str, os.PathLike]) -> Union[List[Optional[np.ndarray]], Dict[str, Optional[np.ndarray]]]:
    """Read an NDArray file into numpy arrays (streamed: no second copy of the whole file)."""
    with open_existing(fname) as f:
        return _read_file(_file_reader(f))


def open_existing(fname: Union[str, os.PathLike], mode: str = "rb"):
    """open() for reading a file that must exist: a missing one is MXNet's MXNetError (MissingFileError,
    also a FileNotFoundError) naming the path."""
    try:
        return open(os.fspath(fname), mode)
    except FileNotFoundError as e:
        raise MissingFileError(e.errno, e.strerror, os.fspath(fname)) from None


# ----------------------------------------------------------------------------- writing

Record = Tuple[Optional[np.ndarray], Device]


def _as_records(data, convert) -> Tuple[List[Record], List[str]]:
    """(records, names) from an array, a list of arrays or a dict of str -> array."""
    if isinstance(data, dict):
        for key in data:
            if not isinstance(key, str):
                raise TypeError(f"NDArray file keys must be str, got {type(key).__name__} key {key!r}")
        return [convert(v, f"data[{k!r}]") for k, v in data.items()], list(data)
    if isinstance(data, (list, tuple)):
        return [convert(v, f"data[{i}]") for i, v in enumerate(data)], []
    return [convert(data, "data")], []


def _numpy_record(value, where: str) -> Record:
    if value is None:
        return None, CPU0
    if isinstance(value, np.generic):  # numpy scalars are 0-d arrays
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{where} must be a numpy array (or None), not {type(value).__name__}; data needs "
                        "to be an array, a list of arrays or a dict of str -> array")
    return value, CPU0


def _shape_bytes(shape: Tuple[int, ...]) -> bytes:
    return struct.pack(f"<i{len(shape)}q", len(shape), *shape)


def _dtype_flag(dtype: np.dtype) -> Tuple[np.dtype, int]:
    """(little-endian dtype, mshadow flag) of a dtype MXNet can read."""
    dtype = dtype.newbyteorder("<") if dtype.itemsize > 1 else dtype
    flag = _WRITABLE_FLAGS.get(dtype)
    if flag is None:
        raise TypeError(f"cannot save dtype {dtype} in an NDArray file; MXNet supports "
                        "float32, float64, float16, uint8, int8, int32, int64 and bool")
    return dtype, flag


def _write_sparse_record(out: BinaryIO, record: SparseRecord, device: Device, magic: int) -> None:
    """MXNet's sparse record: storage type, storage (values) shape, shape, device, dtype flag,
    each aux array's flag and shape, then the values and the aux arrays."""
    dtype, flag = _dtype_flag(record.values.dtype)
    values = np.ascontiguousarray(record.values, dtype=dtype)
    aux = [np.ascontiguousarray(a, dtype=_dtype_flag(a.dtype)[0]) for a in record.aux]
    stype = ROW_SPARSE if record.stype == "row_sparse" else CSR
    out.write(struct.pack("<Ii", magic, stype) + _shape_bytes(values.shape) + _shape_bytes(record.shape)
              + struct.pack("<iii", device[0], device[1], flag))
    for a in aux:
        out.write(struct.pack("<i", _dtype_flag(a.dtype)[1]) + _shape_bytes(a.shape))
    for part in [values] + aux:
        if part.size:
            out.write(memoryview(part).cast("B"))


def _write_record(out: BinaryIO, array: Union[None, np.ndarray, SparseRecord], device: Device,
                  np_shape: bool) -> None:
    magic = V3_MAGIC if np_shape else V2_MAGIC
    if array is None:
        out.write(struct.pack("<Ii", magic, DENSE) + (struct.pack("<i", -1) if np_shape else _shape_bytes(())))
        return
    if isinstance(array, SparseRecord):
        _write_sparse_record(out, array, device, magic)
        return
    dtype, flag = _dtype_flag(array.dtype)
    if array.ndim == 0 and not np_shape:
        raise ValueError("a 0-d array can only be saved with np_shape=True (MXNet 1.x legacy NDArrays "
                         "cannot be 0-d)")
    values = array.astype(dtype, order="C", copy=False)  # keeps 0-d arrays 0-d, unlike ascontiguousarray
    out.write(struct.pack("<Ii", magic, DENSE) + _shape_bytes(values.shape)
              + struct.pack("<iii", device[0], device[1], flag))
    if values.size:
        out.write(memoryview(values).cast("B"))


def _write_file(out: BinaryIO, records: List[Record], names: List[str], np_shape: Optional[bool]) -> None:
    if np_shape is None:  # v3 only when needed: MXNet loads v3 only inside np-shape mode
        np_shape = any(isinstance(a, np.ndarray) and a.ndim == 0 for a, _ in records)
    out.write(struct.pack("<QQQ", LIST_MAGIC, 0, len(records)))
    for array, device in records:
        _write_record(out, array, device, np_shape)
    out.write(struct.pack("<Q", len(names)))
    for name in names:
        raw = name.encode("utf-8")
        out.write(struct.pack("<Q", len(raw)) + raw)


def dumps(data: Arrays, np_shape: Optional[bool] = None) -> bytes:
    """Encode numpy arrays (an array, a list, or a dict of str -> array) as an NDArray file.

    None entries become absent arrays.  `np_shape=None` writes MXNet's v2 records unless
    some array is 0-d, which needs v3 (NumPy shape semantics) records.
    """
    records, names = _as_records(data, _numpy_record)
    out = io.BytesIO()
    _write_file(out, records, names, np_shape)
    return out.getvalue()


def save_numpy(fname: Union[str, os.PathLike], data: Arrays, np_shape: Optional[bool] = None) -> None:
    """Write numpy arrays to `fname` in the NDArray file format (see `dumps`)."""
    records, names = _as_records(data, _numpy_record)
    with open(os.fspath(fname), "wb") as f:
        _write_file(f, records, names, np_shape)


# ----------------------------------------------------------------------------- NDArray API

def _ndarray_record(value, where: str) -> Record:
    if value is None:
        return _numpy_record(value, where)
    if not (hasattr(value, "asnumpy") and hasattr(value, "context")):  # numpy arrays too, as MXNet
        raise TypeError(f"{where} must be an NDArray, not {type(value).__name__}; data needs to be an "
                        "NDArray, a list of NDArrays or a dict of str -> NDArray")
    ctx = value.context
    if getattr(value, "stype", "default") != "default":  # CSRNDArray / RowSparseNDArray
        components = value._host_components()
        return SparseRecord(value.stype, value.shape, components[0], components[1:]), \
            (ctx.device_typeid, ctx.device_id)
    return value.asnumpy(), (ctx.device_typeid, ctx.device_id)


def save(fname: Union[str, os.PathLike], data, np_shape: Optional[bool] = None) -> None:
    """`mx.nd.save`: write an NDArray, a list of NDArrays or a dict of str -> NDArray to `fname`.

    Each array's device is recorded as MXNet does; the bytes match MXNet's for the same data.
    """
    records, names = _as_records(data, _ndarray_record)
    if np_shape is None and _is_np_shape():
        np_shape = True  # MXNet writes version-3 records while NumPy shape semantics is on
    with open(os.fspath(fname), "wb") as f:
        _write_file(f, records, names, np_shape)


def _is_np_shape() -> bool:
    from ..util import is_np_shape
    return is_np_shape()


def _to_ndarray(record):
    from .creation import array
    if record is None:
        return None
    if isinstance(record, SparseRecord):
        from .sparse_ndarray import make_csr, make_row_sparse
        if record.stype == "csr":
            return make_csr(record.values, record.aux[0], record.aux[1], record.shape)
        return make_row_sparse(record.values, record.aux[0], record.shape)
    return array(record, dtype=record.dtype)


def _to_ndarrays(loaded):
    if isinstance(loaded, dict):
        return {k: _to_ndarray(v) for k, v in loaded.items()}
    return [_to_ndarray(v) for v in loaded]


def load(fname: Union[str, os.PathLike]):
    """`mx.nd.load`: the arrays of an NDArray file on the CPU, as a list or (if named) a dict."""
    with open_existing(fname) as f:
        return _to_ndarrays(_read_file(_file_reader(f), keep_sparse=True, check_semantics=True))


def load_frombuffer(buf: Union[bytes, bytearray, memoryview]):
    """`mx.nd.load_frombuffer`: like `load`, from the file's bytes in memory."""
    return _to_ndarrays(_read_file(_bytes_reader(buf, "load_frombuffer"), keep_sparse=True, check_semantics=True))


def record_bytes(value) -> bytearray:
    """One NDArray as MXNet's raw record bytes (MXNDArraySaveRawBytes: what `NDArray.__getstate__` holds)."""
    record, device = _ndarray_record(value, "array")
    out = io.BytesIO()
    _write_record(out, record, device, value.ndim == 0 or _is_np_shape())
    return bytearray(out.getvalue())


def from_record_bytes(buf: Union[bytes, bytearray, memoryview]):
    """The NDArray of one raw record (MXNDArrayLoadFromRawBytes), on the CPU whatever device it names."""
    data = bytes(buf)
    r = _Reader(io.BytesIO(data), len(data))
    return _to_ndarray(_read_record(r, 0, keep_sparse=True))
