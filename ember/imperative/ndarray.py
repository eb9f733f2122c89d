"""NDArray: an asynchronous n-d array whose every operation is an engine op.

An NDArray is a numpy (CPU) or CuPy (GPU) view, `_data`, into the storage of a
`Chunk` whose engine var orders every read and write of that storage.  Calls
return at once; reading values (`asnumpy`, `asscalar`, `repr`, ...) waits on
the var and re-raises errors of the ops that wrote it.
"""
from __future__ import annotations

import ctypes
import numbers
import weakref
from typing import Optional, Tuple, Union

import numpy as np

from .. import backend, engine
from ..context import Context, cpu, current_context
from . import storage, autograd_state
from ..ops.shape import reshape_target

_SCALAR_TYPES = (numbers.Number, np.generic)
_CPU0 = cpu(0)
py_slice = slice  # MXNet's name for the builtin, which its ndarray module shadows with the slice op

# MXNet's storage type ids (as in .params records); sparse arrays live in sparse_ndarray.py
_STORAGE_TYPE_UNDEFINED, _STORAGE_TYPE_DEFAULT, _STORAGE_TYPE_ROW_SPARSE, _STORAGE_TYPE_CSR = -1, 0, 1, 2
_STORAGE_TYPE_STR_TO_ID = {"undefined": _STORAGE_TYPE_UNDEFINED, "default": _STORAGE_TYPE_DEFAULT,
                           "row_sparse": _STORAGE_TYPE_ROW_SPARSE, "csr": _STORAGE_TYPE_CSR}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}


def _is_scalar(x) -> bool:
    t = type(x)
    if t is float or t is int:  # the common case, without the slower ABC check below
        return True
    return isinstance(x, _SCALAR_TYPES) and not isinstance(x, np.ndarray)


_BY_HANDLE = object()  # NDArray(handle) rather than NDArray(data, chunk)
_live_handles: "weakref.WeakValueDictionary[int, NDArray]" = weakref.WeakValueDictionary()


def _by_handle(handle, writable: bool) -> tuple:
    """(data, chunk) of the array `handle` names (`NDArray.handle`); read-only data unless writable."""
    key = handle.value if isinstance(handle, ctypes.c_void_p) else handle if isinstance(handle, int) else None
    arr = _live_handles.get(key) if key is not None else None
    if arr is None:
        from ..base import ArgumentError
        raise ArgumentError(f"NDArray({handle!r}): not the handle of a live NDArray (NDArray(handle) takes "
                            "an array's `handle`; arrays are made by mx.nd functions)")
    data = arr._data
    if not writable and isinstance(data, np.ndarray) and data.flags.writeable:
        data = data.view()
        data.flags.writeable = False
    return data, arr._chunk


class NDArray:
    """An n-dimensional array on one device (MXNet's `mx.nd.NDArray`)."""

    # _c: the storage chunk, or None for a fresh tiny-op output (host memory numpy owns, on cpu(0),
    # live, no engine var yet) until something needs its chunk (`_chunk` makes it then);
    # _sig: (shape, dtype) of _data (which never changes), made on first use: the tiny-op path's plan key
    __slots__ = ("_data", "_c", "_ag", "_sig", "__weakref__")
    # numpy must defer to our reflected operators (np.float32(2) * nd -> NDArray)
    __array_priority__ = 1000.0

    def __init__(self, data, chunk: Optional[storage.Chunk] = _BY_HANDLE, writable: bool = True):
        if chunk is _BY_HANDLE:  # MXNet's NDArray(handle, writable): the array another one's handle names
            data, chunk = _by_handle(data, writable)
        self._data = data
        self._c = chunk
        self._ag = None
        self._sig = None

    @property
    def _chunk(self) -> storage.Chunk:
        """The storage chunk: its engine var, device and liveness (shared by views)."""
        c = self._c
        if c is None:
            c = self._c = storage.Chunk(None, None, _CPU0, nbytes=self._data.nbytes)
        return c

    @_chunk.setter
    def _chunk(self, chunk: storage.Chunk) -> None:
        self._c = chunk

    # -- construction from outside storage ------------------------------------
    @classmethod
    def _wrap(cls, data, var, ctx: Optional[Context] = None) -> "NDArray":
        """An NDArray over an existing buffer guarded by an existing engine var (not owned)."""
        ctx = ctx if ctx is not None else current_context()
        return cls(data, storage.wrap(data, var, ctx))

    # -- properties ---------------------------------------------------------------
    @property
    def var(self):
        """The engine var guarding this array's storage (shared by views)."""
        return self._chunk.var

    @property
    def shape(self) -> Tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self):
        """The element type as a numpy scalar type (np.float32, ...), as MXNet returns it."""
        return self._data.dtype.type

    @property
    def size(self) -> int:
        return int(self._data.size)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def context(self) -> Context:
        return self._chunk.ctx

    ctx = context

    @property
    def stype(self) -> str:
        return "default"

    @property
    def handle(self) -> ctypes.c_void_p:
        """MXNet's NDArrayHandle: an opaque pointer `NDArray(handle)` turns back into an array on
        the same storage, while this one is alive (monitor callbacks cast it from the array)."""
        _live_handles[id(self)] = self
        return ctypes.c_void_p(id(self))

    # ctypes takes an NDArray where a pointer is wanted as its handle: ctypes.cast(arr, NDArrayHandle)
    _as_parameter_ = handle

    @property
    def writable(self) -> bool:
        """False for an array made read-only (NDArray(handle, writable=False))."""
        flags = getattr(self._data, "flags", None)  # (a device array's flags may not say)
        return flags is None or bool(getattr(flags, "writeable", True))

    @property
    def T(self) -> "NDArray":
        if self.ndim < 2:
            return self
        return _call("transpose", (self,), {})

    @property
    def grad(self) -> Optional["NDArray"]:
        """The gradient buffer attached by `attach_grad` (None otherwise)."""
        leaf = self._ag
        return leaf.grad if isinstance(leaf, autograd_state.Leaf) else None

    @property
    def _fresh_grad(self) -> bool:
        """Whether backward wrote this variable's gradient since the flag was cleared (MXNet's
        gradient state; gluon.Trainer reads it to detect stale gradients)."""
        leaf = self._ag
        return isinstance(leaf, autograd_state.Leaf) and leaf.fresh_grad

    @_fresh_grad.setter
    def _fresh_grad(self, state: bool) -> None:
        leaf = self._ag
        if not isinstance(leaf, autograd_state.Leaf):
            from ..base import EmberError
            raise EmberError("NDArray has not been marked as a variable and does not have gradient "
                             "state: call attach_grad() first")
        leaf.fresh_grad = bool(state)

    # -- synchronisation and reading --------------------------------------------------
    def wait_to_read(self) -> None:
        """Block until every pending write to this array is done; re-raise its error."""
        chunk = self._c
        if chunk is None:  # a fresh tiny-op output: an op pending on it, or its error, would need a chunk
            return
        chunk.check()
        engine.wait(chunk.var)

    wait_to_write = wait_to_read

    def asnumpy(self) -> np.ndarray:
        """A numpy copy of the values (waits for pending writes)."""
        self.wait_to_read()
        data = self._data
        if isinstance(data, np.ndarray):
            return data.copy()
        return backend.to_host(data)

    def asscalar(self):
        """The value of a one-element array as a numpy scalar."""
        if self.size != 1:
            raise ValueError(f"the current array is not a scalar: shape {self.shape}")
        return self.asnumpy().reshape(())[()]

    def item(self):
        return self.asscalar().item()

    def __array__(self, dtype=None, copy=None):
        values = self.asnumpy()
        return values if dtype is None else values.astype(dtype, copy=False)

    def tolist(self):
        return self.asnumpy().tolist()

    def __repr__(self) -> str:
        shape = "x".join(str(d) for d in self.shape)
        return f"\n{self.asnumpy()}\n<{type(self).__name__} {shape} @{self.context}>"

    __str__ = __repr__

    def __bool__(self) -> bool:
        n = self.size
        if n == 0:
            return False
        if n == 1:
            return bool(self.asscalar())
        raise ValueError("The truth value of an NDArray with multiple elements is ambiguous.")

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d NDArray")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __hash__(self) -> int:
        return id(self)

    def __reduce__(self):
        return (_unpickle, (self.asnumpy(), self.context))

    def __getstate__(self):
        """{'handle': MXNet's raw record bytes of this array} (MXNet's state; pickling uses __reduce__)."""
        from .serialization import record_bytes
        return {"handle": record_bytes(self)}

    def __setstate__(self, state):
        """Become the array of a state from __getstate__ (MXNet's bytes too), on the CPU."""
        from .serialization import from_record_bytes
        loaded = from_record_bytes(state["handle"])
        self._data, self._chunk, self._ag, self._sig = loaded._data, loaded._chunk, None, None

    # -- arithmetic: the binary operators (+ - * / % ** and comparisons, their reflected and
    # in-place forms) are attached from OPERATORS below by ember/imperative/__init__.py ----------
    def __neg__(self):
        return _call("negative", (self,), {})

    def __pos__(self):
        return self

    def __abs__(self):
        return _call("abs", (self,), {})

    # -- indexing --------------------------------------------------------------------------
    def __getitem__(self, key):
        return indexing.getitem(self, key)

    def __setitem__(self, key, value):
        if type(self._data) is np.ndarray and not self._data.flags.writeable:
            raise ValueError("Cannot assign to readonly NDArray")  # MXNet's words (NDArray(handle, writable=False))
        indexing.setitem(self, key, value)

    # -- shape and copies ------------------------------------------------------------------
    def reshape(self, *shape, **kwargs) -> "NDArray":
        """A view with a new shape (MXNet special values 0, -1, -2, -3, -4; reverse=True)."""
        reverse = bool(kwargs.pop("reverse", False))
        if "shape" in kwargs:
            if shape:
                raise TypeError("reshape: shape given both positionally and by keyword")
            shape = kwargs.pop("shape")
        if kwargs:
            raise TypeError(f"reshape: unexpected keyword arguments {sorted(kwargs)}")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        shape = tuple(int(d) for d in shape)
        self._chunk.check()
        if autograd_state.needs_record(self):
            return _call("Reshape", (self,), {"shape": shape, "reverse": reverse})
        new_shape = reshape_target("reshape", self.shape, shape, reverse)  # the Reshape op's own rule
        if not self._data.flags.c_contiguous:  # foreign (wrapped/DLPack) strided data: no view possible
            return _call("Reshape", (self,), {"shape": new_shape})
        return NDArray(self._data.reshape(new_shape), self._chunk)

    def reshape_like(self, *args, **kwargs) -> "NDArray":
        """A view with `rhs`'s shape; with lhs_begin/lhs_end/rhs_begin/rhs_end, the reshape_like op."""
        if len(args) + len(kwargs) == 1 and (args or "rhs" in kwargs):
            return self.reshape((args[0] if args else kwargs["rhs"]).shape)
        return _call("reshape_like", (self,) + args, kwargs)

    def transpose(self, *axes, **kwargs) -> "NDArray":
        if "axes" in kwargs:
            if axes:
                raise TypeError("transpose: axes given both positionally and by keyword")
            axes = (kwargs.pop("axes"),)
        if kwargs:
            raise TypeError(f"transpose: unexpected keyword arguments {sorted(kwargs)}")
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _call("transpose", (self,), {"axes": tuple(axes)} if axes else {})

    def split_v2(self, *args, **kwargs):
        """Same as `mx.nd.split_v2(self, ...)`."""
        from ..ndarray.legacy_helpers import split_v2
        return split_v2(self, *args, **kwargs)

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape) -> bool:
        """Whether basic indexing with `slc_key` (slices and ints) gives a C-contiguous view: from the
        last axis inwards every step is 1, and once an axis keeps a proper part of its length, every
        axis before it keeps at most one element."""
        lengths_steps = []
        for k, n in zip(slc_key, shape):
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                lengths_steps.append((len(range(start, stop, step)), step, n))
            else:
                lengths_steps.append((1, 1, n))
        if any(length == 0 for length, _, _ in lengths_steps):
            return True
        partial = False
        for length, step, n in reversed(lengths_steps):
            if length == 1:
                partial = partial or n > 1
                continue
            if partial or step != 1:
                return False
            partial = length < n
        return True

    def expand_dims(self, axis: int, inplace: bool = False) -> "NDArray":
        """A new length-1 axis at `axis`; inplace=True returns a view sharing this array's data."""
        if inplace:
            return self.reshape(_op_output_shape("expand_dims", self, {"axis": axis}))
        return _call("expand_dims", (self,), {"axis": axis})

    def squeeze(self, axis=None, inplace: bool = False) -> "NDArray":
        """Drop length-1 axes (all, or those in `axis`); inplace=True returns a view sharing the data."""
        attrs = {} if axis is None else {"axis": axis}
        if inplace:
            return self.reshape(_op_output_shape("squeeze", self, attrs))
        return _call("squeeze", (self,), attrs)

    def flatten(self, inplace: bool = False) -> "NDArray":
        """(d1, d2*...*dk); inplace=True returns a view sharing this array's data."""
        if inplace:
            return self.reshape(_op_output_shape("Flatten", self, {}))
        return _call("Flatten", (self,), {})

    def broadcast_to(self, shape) -> "NDArray":
        return _call("broadcast_to", (self,), {"shape": tuple(shape)})

    def broadcast_like(self, other: "NDArray") -> "NDArray":
        return _call("broadcast_like", (self, other), {})

    def astype(self, dtype, copy: bool = True) -> "NDArray":
        """A copy converted to `dtype` (self when copy=False and the dtype already matches)."""
        dtype = np.dtype(_as_dtype(dtype))
        if not copy and dtype == self._data.dtype:
            return self
        if autograd_state.needs_record(self):
            return _call("Cast", (self,), {"dtype": dtype})
        return copying.copy_to_new(self, self.context, dtype)

    def copy(self) -> "NDArray":
        """A deep copy on the same device."""
        if autograd_state.needs_record(self):
            return _call("_copy", (self,), {})
        return copying.copy_to_new(self, self.context, self._data.dtype)

    def copyto(self, other: Union["NDArray", Context]) -> "NDArray":
        """Copy into `other` (an NDArray of the same shape, or a new array on a Context)."""
        if isinstance(other, Context):
            result = copying.copy_to_new(self, other, self._data.dtype)
            if autograd_state.needs_record(self):
                copying.record_device_copy(self, result)
            return result
        if isinstance(other, NDArray):
            if other is self:
                return self
            if type(other) is not NDArray and other.stype != "default":  # into a sparse array
                from .sparse_ops import assign
                assign(other, self)
                return other
            copying.copy_into(self, other)
            return other
        raise TypeError(f"copyto does not support type {type(other).__name__}; expected NDArray or Context")

    def as_np_ndarray(self):
        """The same array as an `mx.np.ndarray` (no copy)."""
        from ..numpy.multiarray import ndarray
        view = ndarray(self._data, self._chunk)
        view._ag = self._ag
        return view

    def as_nd_ndarray(self) -> "NDArray":
        return self

    def tostype(self, stype: str) -> "NDArray":
        """A copy with storage type `stype`: 'default', 'row_sparse' or 'csr'."""
        from .sparse_ops import cast_storage
        return cast_storage(self, stype)

    def as_in_context(self, context: Context) -> "NDArray":
        """self if already on `context`, else a copy there."""
        if context == self.context:
            return self
        return self.copyto(context)

    as_in_ctx = as_in_context

    def detach(self) -> "NDArray":
        """The same storage, outside the autograd graph."""
        return NDArray(self._data, self._chunk)

    # -- autograd ----------------------------------------------------------------------------
    def attach_grad(self, grad_req: str = "write", stype=None) -> None:
        """Allocate a zero gradient buffer (storage type `stype`, default dense) and make this array
        an autograd variable."""
        autograd_state.attach_grad(self, grad_req, stype)

    def backward(self, out_grad: Optional["NDArray"] = None, retain_graph: bool = False,
                 train_mode: bool = True) -> None:
        """Compute gradients of this array w.r.t. the marked variables."""
        from . import autograd_tape
        autograd_tape.backward([self], None if out_grad is None else [out_grad],
                               retain_graph=retain_graph, train_mode=train_mode)

    # -- DLPack ------------------------------------------------------------------------------
    def to_dlpack_for_read(self):
        return dlpack.to_dlpack_for_read(self)

    def to_dlpack_for_write(self):
        return dlpack.to_dlpack_for_write(self)

    def __dlpack__(self, stream=None, **kwargs):
        return dlpack.dunder_dlpack(self, stream, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    # -- method forms of operators (looked up in the registry at call time) -------------------
    def _free(self) -> None:
        """Release the storage now (after pending ops); later use raises FreedArrayError."""
        self._chunk.free()


# The binary Python operators: (stem, registry op for an NDArray operand, for a scalar operand, for a
# reflected scalar operand (`2 - x`)); comparisons give arrays of 0/1 in the inputs' dtype, as in MXNet 1.x.
ARITHMETIC = (
    ("add", "broadcast_add", "_plus_scalar", "_plus_scalar"),
    ("sub", "broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    ("mul", "broadcast_mul", "_mul_scalar", "_mul_scalar"),
    ("truediv", "broadcast_div", "_div_scalar", "_rdiv_scalar"),
    ("mod", "broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    ("pow", "broadcast_power", "_power_scalar", "_rpower_scalar"),
)
COMPARISONS = (
    ("eq", "broadcast_equal", "_equal_scalar"), ("ne", "broadcast_not_equal", "_not_equal_scalar"),
    ("gt", "broadcast_greater", "_greater_scalar"), ("ge", "broadcast_greater_equal", "_greater_equal_scalar"),
    ("lt", "broadcast_lesser", "_lesser_scalar"), ("le", "broadcast_lesser_equal", "_lesser_equal_scalar"),
)
# Python operator -> (registry op for an NDArray operand, for a scalar operand, in place), the methods
# being fastpath.operator's.  Reflected forms meet scalars only, except that a commutative operator's
# (its reflected scalar op is its own) keeps its array op.
OPERATORS = {f"__{stem}__": (array_op, scalar_op, False) for stem, array_op, scalar_op in COMPARISONS}
for _stem, _array_op, _scalar_op, _rscalar_op in ARITHMETIC:
    OPERATORS[f"__{_stem}__"] = (_array_op, _scalar_op, False)
    OPERATORS[f"__r{_stem}__"] = (_array_op if _rscalar_op == _scalar_op else None, _rscalar_op, False)
    OPERATORS[f"__i{_stem}__"] = (_array_op, _scalar_op, True)
OPERATOR_ALIASES = {"__div__": "__truediv__", "__rdiv__": "__rtruediv__", "__idiv__": "__itruediv__"}


def _op_method(op_name: str):
    def method(self, *args, **kwargs):
        return _call(op_name, (self,) + args, kwargs)
    method.__name__ = op_name
    method.__doc__ = f"Same as `mx.nd.{op_name}(self, ...)`."
    return method


_METHOD_OPS = (
    "sum", "nansum", "prod", "nanprod", "mean", "max", "min", "norm", "argmax", "argmin",
    "argmax_channel", "exp", "expm1", "log", "log10", "log2", "log1p", "sqrt", "rsqrt", "cbrt",
    "rcbrt", "square", "reciprocal", "sign", "round", "rint", "fix", "floor", "ceil", "trunc",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "degrees", "radians", "sigmoid", "relu", "softmax", "log_softmax",
    "clip", "tile", "repeat", "flip", "pad", "take", "pick", "one_hot", "topk", "sort",
    "argsort", "split", "slice", "slice_axis", "slice_like", "swapaxes", "zeros_like",
    "ones_like", "broadcast_axes", "diag", "abs", "softmin", "shape_array", "size_array",
    "depth_to_space", "space_to_depth",
)
for _name in _METHOD_OPS:
    setattr(NDArray, _name, _op_method(_name))


def _unpickle(values, ctx):
    from .creation import array
    return array(values, ctx=ctx, dtype=values.dtype)


def _as_dtype(dtype):
    from ..ops.registry import as_dtype
    return as_dtype(dtype)


def _call(op_name: str, args, kwargs):
    """`mx.nd.<op_name>(*args, **kwargs)`: invoke.call, set by ember/imperative/__init__.py."""
    raise RuntimeError("ember.imperative has not wired its modules yet")


def _op_output_shape(op_name: str, x: "NDArray", attrs: dict) -> tuple:
    """The output shape the registry op `op_name` would give for `x` (its checks and errors too)."""
    from ..ops import get as _get_op
    opdef = _get_op(op_name)
    _, outs, _ = opdef.shapes(opdef.parse_attrs(attrs), [tuple(x.shape)])
    return tuple(outs[0])


# Set by ember/imperative/__init__.py (each of them builds on NDArray, so this module imports none
# of them): the indexing, copying and DLPack helpers the methods above call.
indexing = copying = dlpack = None
