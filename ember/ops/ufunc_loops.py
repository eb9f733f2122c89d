"""numpy's own inner loops for the registry's ufunc forms, run without numpy's per-call dispatch.

An op whose CPU kernel is one ufunc call (`OpDef.cpu_ufunc()`) pays numpy's dispatch on every call
(argument parsing, type resolution, the iterator: ~0.3 µs), ten times the work itself on a (16, 16)
float32 array.  A bound graph knows its arrays once: `loop_of` finds, once per ufunc and dtype, the
inner loop numpy itself runs for those operands (read from the ufunc's public C structure,
numpy's `PyUFuncObject`: `functions`, `data`, `types`), and an executor runs consecutive such
loops in one native call (`ember.engine.native.ufunc_loops`).  The results are numpy's bit for
bit: the same function on the same memory.  Each loop found is first checked against the ufunc
call on probe values (signed zeros, infinities, NaN, subnormals, random values, a scalar
operand); a mismatch, or a ufunc object laid out otherwise, means no loop: the kernel runs.
"""
from __future__ import annotations

import ctypes
import sys
from functools import lru_cache
from typing import NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ..engine import native

# float16/32/64: their loops neither raise nor need the GIL (integer division sets error flags
# numpy turns into warnings, object loops call Python)
LOOP_DTYPES = "efd"


class _UFuncHead(ctypes.Structure):
    """The start of numpy's PyUFuncObject (its public layout, unchanged since numpy 1.0)."""

    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p),
                ("nin", ctypes.c_int), ("nout", ctypes.c_int), ("nargs", ctypes.c_int), ("identity", ctypes.c_int),
                ("functions", ctypes.POINTER(ctypes.c_void_p)), ("data", ctypes.POINTER(ctypes.c_void_p)),
                ("ntypes", ctypes.c_int), ("reserved1", ctypes.c_int),
                ("name", ctypes.c_char_p), ("types", ctypes.POINTER(ctypes.c_ubyte))]


# the object header is two words in the interpreters read this way (not a debug or free-threaded build)
_PLAIN_OBJECT_HEAD = sys.getsizeof(object()) == 2 * ctypes.sizeof(ctypes.c_void_p)


class Loop(NamedTuple):
    """One inner-loop call on fixed arrays."""

    spec: tuple    # (function, data, operand addresses, elements, strides): an item of native.ufunc_loops
    arrays: tuple  # the operands and the output, kept alive with the loop


@lru_cache(maxsize=None)
def inner_loop(ufunc: np.ufunc, char: str) -> Optional[Tuple[int, int]]:
    """(function, data) addresses of the loop numpy runs for `ufunc` on operands and output of dtype
    `char` (one of LOOP_DTYPES); None when there is none, the ufunc is laid out otherwise than
    expected, or the loop does not give the ufunc's results on the probe values."""
    if not (_PLAIN_OBJECT_HEAD and isinstance(ufunc, np.ufunc) and char in LOOP_DTYPES
            and ufunc.nout == 1 and ufunc.nin in (1, 2)):
        return None
    try:
        i = ufunc.types.index(char * ufunc.nin + "->" + char)
    except ValueError:
        return None
    head = _UFuncHead.from_address(id(ufunc))
    nargs, num = ufunc.nin + 1, np.dtype(char).num
    if (head.nin, head.nout, head.nargs, head.ntypes) != (ufunc.nin, 1, nargs, ufunc.ntypes) \
            or head.name != ufunc.__name__.encode() or any(head.types[i * nargs + k] != num for k in range(nargs)) \
            or not head.functions[i]:
        return None
    found = (head.functions[i], head.data[i] or 0)
    return found if _agrees(ufunc, char, found) else None


def loop_of(ufunc: np.ufunc, operands: Sequence[np.ndarray], out: np.ndarray) -> Optional[Loop]:
    """The loop computing `ufunc(*operands, out=out)` as numpy does, or None.

    Every operand has out's dtype (one of LOOP_DTYPES, native byte order) and is C-contiguous with
    out's shape or 0-d (a scalar); out is C-contiguous, writeable and not empty; an operand either
    is out itself (in place) or does not overlap it."""
    if not isinstance(ufunc, np.ufunc) or type(out) is not np.ndarray or out.dtype.char not in LOOP_DTYPES \
            or not out.dtype.isnative or not out.flags.c_contiguous or not out.flags.writeable or out.size == 0 \
            or len(operands) != ufunc.nin:
        return None
    for x in operands:
        if type(x) is not np.ndarray or x.dtype != out.dtype \
                or not (x.ndim == 0 or (x.shape == out.shape and x.flags.c_contiguous)):
            return None
        in_place = x.ctypes.data == out.ctypes.data and x.shape == out.shape
        if not in_place and np.may_share_memory(x, out):
            return None
    found = inner_loop(ufunc, out.dtype.char)
    if found is None:
        return None
    return Loop(_spec(found, operands, out), tuple(operands) + (out,))


def _probe_values(dtype: np.dtype) -> np.ndarray:
    info = np.finfo(dtype)
    special = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.inf, -np.inf, np.nan, float(info.max), float(-info.max),
               float(info.tiny), float(info.smallest_subnormal), -float(info.smallest_subnormal), 88.7, -88.7, 1e4]
    rs = np.random.RandomState(0)
    with np.errstate(over="ignore"):
        values = np.concatenate([np.array(special, np.float64), rs.standard_normal(600) * 4,
                                 rs.uniform(-1, 1, 400)]).astype(dtype)
    return values


def _agrees(ufunc: np.ufunc, char: str, found: Tuple[int, int]) -> bool:
    """Whether the loop gives the ufunc's results, bit for bit, on the probe values (for a binary
    ufunc each value against others, both ways, and against a scalar operand), in runs long and
    short (vector bodies and tails)."""
    dtype = np.dtype(char)
    x = _probe_values(dtype)
    if ufunc.nin == 1:
        cases = [(x,), (x[:3],)]
    else:
        y = np.roll(x, 7)
        cases = [(x, y), (y, x), (x, x[5:6].reshape(())), (x[9:10].reshape(()), x), (x[:3], y[:3])]
    bits = np.dtype(f"u{dtype.itemsize}")
    for operands in cases:
        operands = tuple(o.copy() for o in operands)  # C-contiguous, 0-d ones kept 0-d
        out = np.empty(max(o.shape for o in operands), dtype)
        native.ufunc_loops([_spec(found, operands, out)])()
        with np.errstate(all="ignore"):
            want = ufunc(*operands)
        if not np.array_equal(want.view(bits), out.view(bits)):
            return False
    return True


def _spec(found: Tuple[int, int], operands: Sequence[np.ndarray], out: np.ndarray) -> tuple:
    # a 0-d operand is a scalar: stride 0, as numpy's iterator broadcasts it
    return (found[0], found[1], tuple(o.ctypes.data for o in operands) + (out.ctypes.data,), out.size,
            tuple(0 if o.ndim == 0 else o.itemsize for o in operands) + (out.itemsize,))
