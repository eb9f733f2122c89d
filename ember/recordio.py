"""`mx.recordio`: MXNet's RecordIO files (`.rec`) and their `.idx` index, byte-compatible with MXNet.

A record on disk is `magic (u32 0xced7230a) | lrec (u32: cflag << 29 | length) | payload | zero
padding to 4 bytes`, little-endian.  A payload that contains the magic number at a 4-byte aligned
offset is split there into parts (cflag 1 = first, 2 = middle, 3 = last) and the magic words are
dropped, exactly as dmlc-core's RecordIOWriter does, so a reader never mistakes payload bytes for
a record start.  `pack`/`unpack` add MXNet's image-record header (`IRHeader`, struct 'IfQQ').
"""
from __future__ import annotations

import numbers
import os
import struct
from collections import namedtuple
from typing import Any, List, Optional, Tuple

import numpy as np

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img", "unpack_img"]

_MAGIC = 0xced7230a
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_LEN_MASK = (1 << 29) - 1


def _encode_lrec(cflag: int, length: int) -> bytes:
    return struct.pack("<II", _MAGIC, (cflag << 29) | length)


class MXRecordIO:
    """Reads or writes a sequence of binary records (`flag` 'r' or 'w') at `uri`."""

    def __init__(self, uri: str, flag: str):
        self.uri = str(uri)
        self.flag = flag
        self.handle = None
        self.pid = None
        self.is_open = False
        self.writable = False
        self.open()

    def open(self) -> None:
        """Open the file (truncating it for 'w')."""
        if self.flag == "w":
            self.handle = open(self.uri, "wb")
            self.writable = True
        elif self.flag == "r":
            if not os.path.isfile(self.uri):
                from .base import MXNetError
                raise MXNetError(f"RecordIO: cannot open '{self.uri}' for reading: no such file")
            self.handle = open(self.uri, "rb")
            self.writable = False
        else:
            raise ValueError("Invalid flag %s" % self.flag)
        self.pid = os.getpid()
        self.is_open = True

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the file object may already be gone
            pass

    def __getstate__(self):
        """Pickled state: the path and flag, not the open file (reopened on unpickling)."""
        d = dict(self.__dict__)
        d["handle"] = None
        return d

    def __setstate__(self, d):
        self.__dict__ = d
        was_open = d["is_open"]
        self.is_open = False
        self.handle = None
        if was_open:
            self.open()

    def _check_pid(self, allow_reset: bool = False) -> None:
        # A forked child shares the parent's file offset: reopen (readers) or refuse (writers).
        if self.pid != os.getpid():
            if allow_reset:
                self.reset()
            else:
                raise RuntimeError("Forbidden operation in multiple processes")

    def close(self) -> None:
        """Close the file (a no-op when closed)."""
        if not self.is_open:
            return
        self.handle.close()
        self.handle = None
        self.is_open = False
        self.pid = None

    def reset(self) -> None:
        """Close and reopen: a reader starts from the first record again."""
        self.close()
        self.open()

    def write(self, buf: bytes) -> None:
        """Append one record."""
        assert self.writable
        self._check_pid(allow_reset=False)
        if isinstance(buf, str):
            buf = buf.encode()
        data = memoryview(buf).cast("B")
        size = len(data)
        if size >= (1 << 29):
            raise ValueError(f"RecordIO: a record must be shorter than 2**29 bytes, got {size}")
        out = self.handle
        start = 0
        # split at every 4-byte aligned magic word, as dmlc's RecordIOWriter (readers rejoin them)
        for i in range(0, (size >> 2) << 2, 4):
            if data[i:i + 4] == _MAGIC_BYTES:
                out.write(_encode_lrec(1 if start == 0 else 2, i - start))
                out.write(data[start:i])
                start = i + 4
        out.write(_encode_lrec(3 if start else 0, size - start))
        out.write(data[start:])
        pad = (-size) % 4
        if pad:
            out.write(b"\0" * pad)

    def read(self) -> Optional[bytes]:
        """The next record, or None at the end of the file."""
        assert not self.writable
        self._check_pid(allow_reset=False)
        f = self.handle
        parts: List[bytes] = []
        while True:
            head = f.read(8)
            if not head:
                if parts:
                    raise _format_error(self.uri, "the file ends inside a split record")
                return None
            if len(head) < 8:
                raise _format_error(self.uri, "truncated record header")
            magic, lrec = struct.unpack("<II", head)
            if magic != _MAGIC:
                raise _format_error(self.uri, f"invalid record magic 0x{magic:08x} at offset {f.tell() - 8}")
            cflag, length = lrec >> 29, lrec & _LEN_MASK
            body = f.read((length + 3) & ~3)
            if len(body) < length:
                raise _format_error(self.uri, "truncated record body")
            parts.append(body[:length])
            if cflag in (0, 3):
                return _MAGIC_BYTES.join(parts)


def _format_error(uri: str, what: str):
    from .base import MXNetError
    return MXNetError(f"RecordIO '{uri}': {what}")


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an index file of `key\\tbyte offset` lines, for random access."""

    def __init__(self, idx_path: str, uri: str, flag: str, key_type=int):
        self.idx_path = str(idx_path)
        self.idx = {}
        self.keys: List[Any] = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self) -> None:
        super().open()
        self.idx = {}
        self.keys = []
        self.fidx = open(self.idx_path, self.flag)
        if not self.writable:
            for line in iter(self.fidx.readline, ""):
                fields = line.strip().split("\t")
                if len(fields) < 2:
                    continue
                key = self.key_type(fields[0])
                self.idx[key] = int(fields[1])
                self.keys.append(key)

    def close(self) -> None:
        if not self.is_open:
            return
        super().close()
        self.fidx.close()

    def __getstate__(self):
        d = super().__getstate__()
        d["fidx"] = None
        return d

    def seek(self, idx) -> None:
        """Position the reader at the record with key `idx`."""
        assert not self.writable
        self._check_pid(allow_reset=True)
        if idx not in self.idx:
            raise KeyError(idx)
        self.handle.seek(self.idx[idx])

    def tell(self) -> int:
        """The writer's current byte offset."""
        assert self.writable
        return self.handle.tell()

    def read_idx(self, idx) -> bytes:
        """The record with key `idx`."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf: bytes) -> None:
        """Append a record under key `idx` (and its index line)."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write("%s\t%d\n" % (str(key), pos))
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """An image record's header: flag (label count when > 0), label, id, id2."""
_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s: bytes) -> bytes:
    """Header + payload as one record string; an array label goes after the header as float32s."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s: bytes) -> Tuple[IRHeader, bytes]:
    """(IRHeader, payload) of a record made by `pack`; an array label comes back as float32s."""
    if len(s) < _IR_SIZE:
        raise ValueError(f"unpack: a packed record holds at least {_IR_SIZE} bytes, got {len(s)}")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def _pil():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("image encoding and decoding needs the Pillow package (pip install Pillow), "
                          "which is not installed") from None
    return Image


def decode_image(buf: bytes, flag: int = -1) -> np.ndarray:
    """Decode encoded image bytes to an HxWxC (or HxW for flag -1 on a gray image) uint8 array in
    RGB channel order; flag 0 gives one gray channel, 1 three colour channels, -1 as stored."""
    Image = _pil()
    import io
    try:
        img = Image.open(io.BytesIO(bytes(buf)))
        img.load()
    except Exception as err:
        raise ValueError(f"cannot decode image data ({len(buf)} bytes): {err}") from None
    if flag == 0:
        img = img.convert("L")
    elif flag > 0:
        img = img.convert("RGB")
    elif img.mode not in ("L", "RGB", "RGBA"):
        img = img.convert("RGBA" if "A" in img.mode else "RGB")
    return np.asarray(img)


def unpack_img(s: bytes, iscolor: int = -1) -> Tuple[IRHeader, np.ndarray]:
    """(IRHeader, image) of a packed image record; channels in BGR order as MXNet's (OpenCV)."""
    header, s = unpack(s)
    img = decode_image(s, iscolor)
    if img.ndim == 3 and img.shape[2] >= 3:
        img = np.ascontiguousarray(img[:, :, [2, 1, 0] + list(range(3, img.shape[2]))])
    return header, img


def pack_img(header, img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """Encode a BGR (OpenCV order, as MXNet) uint8 image and pack it with `header`."""
    Image = _pil()
    import io
    img = np.asarray(img)
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    if img.ndim == 3 and img.shape[2] >= 3:
        img = img[:, :, [2, 1, 0] + list(range(3, img.shape[2]))]
    fmt = img_fmt.upper().lstrip(".")
    out = io.BytesIO()
    pil = Image.fromarray(np.ascontiguousarray(img.astype(np.uint8, copy=False)))
    if fmt in ("JPG", "JPEG"):
        pil.save(out, format="JPEG", quality=int(quality))
    elif fmt == "PNG":
        # MXNet passes `quality` as OpenCV's PNG compression level (0-9)
        pil.save(out, format="PNG", compress_level=max(0, min(9, int(quality))))
    else:
        raise ValueError(f"pack_img: unsupported image format {img_fmt!r}; use '.jpg' or '.png'")
    return pack(header, out.getvalue())
