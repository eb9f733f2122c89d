"""Gluon parameters: `Parameter`, `Constant`, `ParameterDict` (MXNet 1.9.1's `mx.gluon.parameter`).

A Parameter holds one copy of its value per context (and a gradient buffer per copy unless
grad_req is 'null').  A shape may contain 0 for a dimension not known yet; such a parameter
created with `allow_deferred_init=True` is initialized at the first forward, when the block's
traced graph has inferred the shape ("deferred initialization").
"""
from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from .. import initializer
from .. import ndarray as nd
from .. import symbol as sym_mod
from ..autograd import _Scope
from ..base import EmberError
from ..context import Context, cpu, current_context
from ..imperative import autograd_state as _ag
from ..imperative.ndarray import NDArray
from ..util import is_np_array, is_np_shape
from .utils import _brief_print_list, shape_is_known


def _np_view(arr: NDArray) -> NDArray:
    """`arr` as an mx.np.ndarray view (same storage, var and autograd entry)."""
    from ..numpy.multiarray import _as_np
    return _as_np(arr)


mx_real_t = np.float32
tensor_types = (sym_mod.Symbol, NDArray)


class ParameterError(EmberError, ValueError):
    """A parameter was given a value or shape it cannot take, or a file that does not fit."""


class UninitializedParameterError(EmberError, RuntimeError):
    """A parameter's data or gradient was read before it was initialized (or on a context it lacks)."""


class DeferredInitializationError(EmberError, RuntimeError):
    """A parameter's data was read before its deferred initialization (its shape is not known yet)."""


class ParameterMismatchError(EmberError, AssertionError):
    """A saved or shared value does not match the parameter (MXNet asserts here: AssertionError)."""


class SparseStorageError(EmberError, AssertionError):
    """A row_sparse parameter where sparse storage is not supported (MXNet asserts: AssertionError)."""


def _as_ctx_list(ctx) -> List[Context]:
    if ctx is None:
        return [current_context()]
    if isinstance(ctx, Context):
        return [ctx]
    ctx = list(ctx)
    for c in ctx:
        if not isinstance(c, Context):
            raise TypeError(f"ctx must be a Context or a list of Contexts, got {type(c).__name__}")
    return ctx


class Parameter:
    """A block's weight: one value per context, a gradient per value, and how the optimizer treats it.

    `shape` may hold 0 for unknown dimensions; `allow_deferred_init=True` lets `initialize`
    wait until the first forward fills them in.  `grad_req` is 'write', 'add' or 'null';
    `lr_mult`/`wd_mult` scale the optimizer's learning rate and weight decay for it.
    """

    def __init__(self, name: str, grad_req: str = "write", shape=None, dtype=mx_real_t,
                 lr_mult: float = 1.0, wd_mult: float = 1.0, init=None, allow_deferred_init: bool = False,
                 differentiable: bool = True, stype: str = "default", grad_stype: str = "default"):
        for what, value in (("stype", stype), ("grad_stype", grad_stype)):
            if value not in ("default", "row_sparse", "csr"):
                raise ParameterMismatchError(f"{what} for Parameter '{name}' must be one of 'default', "
                                             f"'row_sparse', or 'csr', but got '{value}'")
        self._var = None
        self._data: Optional[List[NDArray]] = None
        self._grad: Optional[List[NDArray]] = None
        self._ctx_list: Optional[List[Context]] = None
        self._trainer = None
        self._deferred_init: tuple = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req: Optional[str] = None
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        self._shape = tuple(int(d) for d in shape) if shape is not None else None
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        self._stype = stype
        self._grad_stype = grad_stype

    def __repr__(self) -> str:
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"

    # -- attributes ------------------------------------------------------------------------
    @property
    def grad_req(self) -> str:
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req not in ("write", "add", "null"):
            raise ParameterMismatchError(f"grad_req must be one of 'write', 'add', or 'null', but got '{req}'")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == "null" and self._grad is not None:
            self._grad = None
            self._data = [d.detach() if type(d) is NDArray else _np_view(d.detach()) for d in self._data]
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self):
        return self._dtype

    @dtype.setter
    def dtype(self, dtype) -> None:
        self.cast(dtype)

    @property
    def shape(self):
        """The shape; 0 marks a dimension that is not known yet (-1 under NumPy shape semantics, as MXNet)."""
        if self._shape is not None and is_np_shape():
            return tuple(-1 if d == 0 else d for d in self._shape)
        return self._shape

    @shape.setter
    def shape(self, new_shape) -> None:
        if new_shape is None:
            return
        new_shape = tuple(0 if d is None or int(d) == -1 else int(d) for d in new_shape)  # stored: 0 unknown
        if self._shape is None:
            self._shape = new_shape
            return
        if len(self._shape) != len(new_shape) or \
                not all(j == 0 or i in (0, j) for i, j in zip(new_shape, self._shape)):
            raise ParameterMismatchError(f"Parameter '{self.name}': expected shape {new_shape} is incompatible "
                                         f"with given shape {self._shape}")
        self._shape = tuple(i or j for i, j in zip(new_shape, self._shape))

    @property
    def stype(self) -> str:
        return self._stype

    def _set_trainer(self, trainer) -> None:
        """Remember the Trainer that updates this parameter; a row_sparse one keeps its first
        (the store of that Trainer holds its weight), as MXNet 1.9.1."""
        if self._stype != "default" and self._trainer and trainer and self._trainer is not trainer:
            raise RuntimeError(f"Failed to set the trainer for Parameter '{self.name}' because it was already set. "
                               f"More than one trainers for a {self._stype} Parameter is not supported.")
        self._trainer = trainer

    # -- access ------------------------------------------------------------------------------
    def _check_and_get(self, arr_list, ctx):
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            for c, arr in zip(self._ctx_list, arr_list):
                if c == ctx:
                    return arr
            raise UninitializedParameterError(
                f"Parameter '{self.name}' was not initialized on context {ctx}. "
                f"It was only initialized on {self._ctx_list}.")
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because initialization was deferred. "
                "Actual initialization happens during the first forward pass. Please pass one batch of data "
                "through the network before accessing Parameters. You can also avoid deferred initialization "
                "by specifying in_units, num_features, etc., for network layers.")
        raise UninitializedParameterError(
            f"Parameter '{self.name}' has not been initialized. Note that you should initialize parameters "
            "and create Trainer with Block.collect_params() instead of Block.params because the later does "
            "not include Parameters of nested child Blocks")

    def data(self, ctx: Optional[Context] = None) -> NDArray:
        """The value on `ctx` (the only one, or the current context's, when ctx is None)."""
        if self._stype != "default":
            raise UninitializedParameterError(
                f"Cannot return a copy of Parameter '{self.name}' on ctx {ctx} via data() because its storage "
                f"type is {self._stype}. Please use row_sparse_data() instead.")
        return self._check_and_get(self._data, ctx)

    def list_data(self) -> List[NDArray]:
        """The values on every context, in the order of `list_ctx()`."""
        if self._stype != "default":
            raise UninitializedParameterError(
                f"Cannot return copies of Parameter '{self.name}' on all contexts via list_data() because its "
                f"storage type is {self._stype}. Please use row_sparse_data() instead.")
        return self._check_and_get(self._data, list)

    def row_sparse_data(self, row_id: NDArray):
        """The rows `row_id` of a row_sparse parameter, on row_id's context (through its Trainer)."""
        return self._get_row_sparse(row_id.context, row_id)

    def list_row_sparse_data(self, row_id: NDArray):
        """The rows `row_id` of a row_sparse parameter on every context."""
        return self._get_row_sparse(list, row_id)

    def _get_row_sparse(self, ctx, row_id):
        if self._stype != "row_sparse":
            raise UninitializedParameterError(
                f"Cannot return a copy of Parameter {self.name} via row_sparse_data() because its storage type is "
                f"{self._stype}. Please use data() instead.")
        if not isinstance(row_id, NDArray):
            raise TypeError(f"row_id must have NDArray type, but {type(row_id)} is given")
        if self._trainer is None:
            raise UninitializedParameterError(
                f"Cannot get row_sparse data for Parameter '{self.name}' when no Trainer is created with it.")
        results = self._check_and_get(self._data, ctx)
        self._trainer._row_sparse_pull(self, results, row_id)
        return results

    def grad(self, ctx: Optional[Context] = None) -> NDArray:
        """The gradient buffer on `ctx`."""
        if self._data is not None and self._grad is None:
            raise UninitializedParameterError(
                f"Cannot get gradient array for Parameter '{self.name}' because grad_req='null'")
        return self._check_and_get(self._grad, ctx)

    def list_grad(self) -> List[NDArray]:
        """The gradient buffers on every context."""
        return self.grad(list)  # `list` for ctx: every context's (see _check_and_get)

    def list_ctx(self) -> List[Context]:
        """The contexts the parameter lives on (or will, once deferred initialization finishes)."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise UninitializedParameterError(f"Parameter '{self.name}' has not been initialized")
        return self._ctx_list

    def _is_initialized(self) -> bool:
        return self._data is not None

    # -- initialization -----------------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=None, force_reinit: bool = False) -> None:
        """Create the value on each context with `init` (else the parameter's own, else `default_init`).

        With unknown dimensions and `allow_deferred_init`, initialization waits for the first forward.
        """
        if default_init is None:
            default_init = initializer.Uniform()
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter '{self.name}' is already initialized, ignoring. "
                          "Set force_reinit=True to re-initialize.", stacklevel=2)
            return
        self._data = self._grad = None
        ctx = _as_ctx_list(ctx)
        if init is None:
            init = default_init if self.init is None else self.init
        if not shape_is_known(self.shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise ParameterError(f"Cannot initialize Parameter '{self.name}' because it has invalid shape: "
                                 f"{self.shape}.")
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self) -> None:
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        if not shape_is_known(self.shape):
            raise ParameterError(f"Cannot initialize Parameter '{self.name}' because it has invalid shape: "
                                 f"{self.shape}. Please specify in_units, in_channels, etc for `Block`s.")
        self._deferred_init = ()
        with _Scope(False, None):  # not recorded; training mode unchanged
            if data is None:
                if self._stype != "default" and is_np_array():
                    raise ValueError(f"mxnet.numpy.zeros does not support stype = {self._stype} "
                                     f"(Parameter '{self.name}' under NumPy array semantics)")
                # a row_sparse parameter starts as a row_sparse array the initializer fills (every row)
                data = nd.zeros(self.shape, dtype=self.dtype, ctx=cpu(), stype=self._stype)
                # MXNet's rule: the parameter's own (or the default) initializer fills it as a weight
                initializer.create(default_init)(initializer.InitDesc(self.name, {"__init__": init}), data)
            self._init_impl(data, ctx)

    def _init_impl(self, data: NDArray, ctx_list: Sequence[Context]) -> None:
        self._ctx_list = list(ctx_list)
        self._data = [data.copyto(c) for c in self._ctx_list]
        if is_np_array() and data.stype == "default":  # MXNet: parameters made under set_np() are mx.np arrays
            self._data = [_np_view(d) for d in self._data]
        self._init_grad()

    def _init_grad(self) -> None:
        if self.grad_req == "null":
            self._grad = None
            return
        # a row_sparse gradient buffer starts with no rows; backward writes the rows it touches
        self._grad = [nd.zeros(d.shape, dtype=d.dtype, ctx=d.context, stype=self._grad_stype) for d in self._data]
        self._grad = [_np_view(g) if type(d) is not NDArray and g.stype == "default" else g
                      for d, g in zip(self._data, self._grad)]  # the gradient is of its data's array type
        for d, g in zip(self._data, self._grad):
            _ag.mark_variable(d, g, self.grad_req)

    def _check_loadable(self, data: NDArray, cast_dtype: bool, dtype_source: str) -> None:
        """Raise, changing nothing, if `data` cannot be loaded into this parameter."""
        if cast_dtype and dtype_source not in ("current", "saved"):
            raise ValueError(f"dtype_source must be 'current' or 'saved', got {dtype_source!r}")
        if self.shape:
            if len(self.shape) != len(data.shape) or \
                    not all(s in (0, -1, d) for s, d in zip(self.shape, data.shape)):
                raise ParameterMismatchError(
                    f"Failed loading Parameter '{self.name}' from saved params: shape incompatible expected "
                    f"{self.shape} vs saved {tuple(data.shape)}")
        if self.dtype is not None and not cast_dtype and np.dtype(self.dtype) != np.dtype(data.dtype):
            raise ParameterMismatchError(
                f"Failed loading Parameter '{self.name}' from saved params: dtype incompatible expected "
                f"{np.dtype(self.dtype)} vs saved {np.dtype(data.dtype)}. Set cast_dtype=True to cast the dtype "
                "of saved params.")

    def _load_init(self, data: NDArray, ctx=None, cast_dtype: bool = False, dtype_source: str = "current") -> None:
        """(Re)initialize from loaded data (MXNet's `_load_init`)."""
        self._check_loadable(data, cast_dtype, dtype_source)
        if self.shape:
            self._shape = tuple(d if s in (0, -1) else s for s, d in zip(self.shape, data.shape))
        if cast_dtype and np.dtype(self.dtype) != np.dtype(data.dtype):
            if dtype_source == "current":
                data = data.astype(self.dtype, copy=False)
            else:
                self.dtype = data.dtype
        if self._stype != data.stype:
            data = data.tostype(self._stype)
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data is None:
            if self._deferred_init:
                if ctx is not None and set(ctx) != set(self._deferred_init[1]):
                    raise ParameterMismatchError(
                        f"Failed to load Parameter '{self.name}' on {ctx} because it was previous initialized "
                        f"on {self.list_ctx()}.")
                ctx = self._deferred_init[1]
            elif ctx is None:
                ctx = [cpu()]
            self._init_impl(data, ctx)
        else:
            if ctx is not None and set(ctx) != set(self.list_ctx()):
                raise ParameterMismatchError(
                    f"Failed to load Parameter '{self.name}' on {ctx} because it was previous initialized on "
                    f"{self.list_ctx()}.")
            self.set_data(data)
        self._deferred_init = ()

    def reset_ctx(self, ctx) -> None:
        """Move the parameter to other contexts, keeping its value."""
        ctx = _as_ctx_list(ctx)
        if self._data:
            data = self._reduce()
            with _Scope(False, None):  # not recorded; training mode unchanged
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise ParameterError(f"Cannot reset context for Parameter '{self.name}' because it has not been "
                                 "initialized.")

    def set_data(self, data) -> None:
        """Set the value on every context (before deferred initialization: the value it will start from)."""
        if not isinstance(data, NDArray):
            data = nd.array(data, dtype=self.dtype)
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise UninitializedParameterError(f"Parameter '{self.name}' has not been initialized")
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        trainer = self._trainer
        if trainer is not None and getattr(trainer, "_kv_initialized", False) and \
                getattr(trainer, "_update_on_kvstore", False) and self not in getattr(trainer, "_params_to_init", ()):
            trainer._reset_kvstore()
        for arr in self._data:  # each copy from a value on its own device (setitem stays on one)
            arr[...] = data if data.context == arr.context else data.as_in_context(arr.context)

    def _reduce(self) -> NDArray:
        """The value on cpu: the average of the copies when there are several; a row_sparse
        parameter's every row, pulled through its Trainer's store (as MXNet)."""
        if self._stype != "default":
            if self._trainer is None:
                raise UninitializedParameterError(
                    f"Cannot reduce row_sparse Parameter '{self.name}' when no Trainer is created with it.")
            all_rows = nd.arange(0, self.shape[0], dtype="int64", ctx=cpu())
            data = nd.zeros(self.shape, dtype=self.dtype, ctx=cpu(), stype="row_sparse")
            self._trainer._row_sparse_pull(self, data, all_rows, full_idx=True)
            return data
        block = self._check_and_get(self._data, list)
        if len(block) == 1:
            return block[0].copyto(cpu())
        total = block[0].copyto(cpu())
        for w in block[1:]:
            total += w.copyto(cpu())
        return total / len(block)

    def zero_grad(self) -> None:
        """Set the gradient buffers to 0 (nothing to do with grad_req 'null' or before initialization)."""
        if self._grad is None:
            return
        for g in self._grad:
            if g.stype == "default":
                g[...] = 0
            else:  # no stored rows, as zeros_like does (assigning 0 would store every row)
                nd.zeros_like(g, out=g)

    def var(self) -> sym_mod.Symbol:
        """The symbol variable standing for this parameter in traced graphs."""
        if self._var is None:
            # a partly known shape goes on the variable with 0 for the unknown dimensions (as in MXNet):
            # shape inference fills them, and learns the rank from it (a weight flattened by reshape(-1))
            shape = self.shape if self.shape is not None and len(self.shape) else None
            self._var = sym_mod.var(self.name, shape=shape, dtype=self.dtype, lr_mult=self.lr_mult,
                                    wd_mult=self.wd_mult, init=_init_attr(self.init) or None,
                                    stype=None if self._stype == "default" else self._stype)
        if is_np_array():  # what an np symbol knows of it; refreshed, since a deferred shape becomes known
            from ..symbolic import np_symbol
            known = tuple(d or None for d in self._shape) if self._shape else None  # None: unknown dim
            np_symbol.describe(self._var, known, self.dtype)
        return self._var

    def cast(self, dtype) -> None:
        """Change the data type of the value and gradient on every context."""
        self._dtype = dtype
        self._var = None
        if self._data is None:
            return
        with _Scope(False, None):  # not recorded; training mode unchanged
            self._data = [d.astype(dtype) for d in self._data]
            if self._grad is None:
                return
            self._grad = [g.astype(dtype) for g in self._grad]
            for d, g in zip(self._data, self._grad):
                _ag.mark_variable(d, g, self.grad_req)


def _init_attr(init) -> str:
    """The `__init__` attribute text for an initializer given as a name, an instance or None."""
    if init is None:
        return ""
    if isinstance(init, str):
        return init
    if isinstance(init, initializer.Initializer):
        return init.dumps()
    raise TypeError(f"init must be an Initializer or its name, got {type(init).__name__}")


class Constant(Parameter):
    """A parameter that never changes: no gradient, ignored by Trainer (MXNet's `gluon.Constant`)."""

    def __init__(self, name: str, value):
        if not isinstance(value, NDArray):
            value = nd.array(value)
        self.value = value
        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype, init=initializer.Constant(value))

    def __repr__(self) -> str:
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def grad_req(self) -> str:
        return "null"

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req != "null":
            warnings.warn(f'Constant parameter "{self.name}" does not support grad_req other than "null", '
                          f'and new value "{req}" is ignored.', stacklevel=2)
        self._grad_req = "null"


class ParameterDict:
    """An ordered name -> Parameter map with a name prefix, and parameters shared from another dict."""

    def __init__(self, prefix: str = "", shared: Optional["ParameterDict"] = None):
        self._prefix = prefix
        self._params: "OrderedDict[str, Parameter]" = OrderedDict()
        self._shared = shared

    def __repr__(self) -> str:
        name = self._prefix + " " if self._prefix else ""
        body = "\n".join("  " + repr(v).replace("\n", "\n  ") for v in self.values())
        return f"{name}(\n{body}\n)"

    def __getitem__(self, key: str) -> Parameter:
        return self._params[key]

    def __setitem__(self, key: str, value: Parameter) -> None:
        self._params[key] = value

    def __contains__(self, key) -> bool:
        return key in self._params

    def __iter__(self):
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def items(self):
        return self._params.items()

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    @property
    def prefix(self) -> str:
        """The prefix put before every name this dict creates."""
        return self._prefix

    def _get_impl(self, name: str) -> Optional[Parameter]:
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name: str, **kwargs) -> Parameter:
        """The parameter `prefix + name`, created with `kwargs` if absent (shared dicts are searched first).

        An existing parameter must agree with the given attributes; unknown (0) dimensions of
        either shape are completed from the other.
        """
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for k, v in kwargs.items():
            existing = getattr(param, k, None)
            if existing is None:
                setattr(param, k, v)
                continue
            if k == "shape" and v is not None:
                v = (int(v),) if isinstance(v, (int, np.integer)) else tuple(v)
                if len(v) == len(existing):
                    merged, ok = [], True
                    for a, b in zip(v, existing):
                        if a != b and a > 0 and b > 0:
                            ok = False
                            break
                        merged.append(b if a in (0, -1) else a)
                    if ok:
                        param._shape = tuple(merged)
                        continue
            elif k == "dtype" and v is not None and np.dtype(v) == np.dtype(existing):
                continue
            if v is not None and v != existing:
                raise ParameterMismatchError(
                    f"Cannot retrieve Parameter '{name}' because desired attribute does not match with stored for "
                    f"attribute '{k}': desired '{v}' vs stored '{existing}'.")
        return param

    def get_constant(self, name: str, value=None) -> Constant:
        """The constant `prefix + name`, created from `value` if absent."""
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError(f"No constant named '{name}'. Please specify value if you want to create a new "
                               "constant.")
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise ParameterMismatchError(f"Parameter '{name}' already exists but it is not a constant.")
            value = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
            if param.shape != value.shape or not (param.value.asnumpy() == value).all():
                raise ParameterMismatchError(f"Constant '{name}' already exists but its value doesn't match new "
                                             "value")
        return param

    def update(self, other: Union["ParameterDict", Dict[str, Parameter]]) -> None:
        """Add the parameters of `other`; a name already here must be the very same Parameter."""
        for k, v in other.items():
            if k in self._params and self._params[k] is not v:
                raise ParameterMismatchError(f"Cannot update self with other because they have different "
                                             f"Parameters with the same name '{k}'")
        for k, v in other.items():
            self._params[k] = v

    def initialize(self, init=None, ctx=None, verbose: bool = False, force_reinit: bool = False) -> None:
        """Initialize every parameter (`init` is the default for those without their own)."""
        if init is None:
            init = initializer.Uniform()
        if verbose:
            init.set_verbosity(verbose=verbose)
        for v in self.values():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        """Set every gradient buffer to 0: one reset_arrays op per context, as MXNet."""
        by_ctx: Dict[Context, List[NDArray]] = {}
        for v in self.values():
            if v.grad_req != "null" and v._grad is not None:
                for g in v._grad:
                    if g.stype != "default":
                        nd.zeros_like(g, out=g)
                    else:
                        by_ctx.setdefault(g.context, []).append(g)
        for grads in by_ctx.values():
            nd.reset_arrays(*grads, num_arrays=len(grads))

    def reset_ctx(self, ctx) -> None:
        """Move every parameter to `ctx`."""
        for v in self.values():
            v.reset_ctx(ctx)

    def list_ctx(self) -> List[Context]:
        """Every context some parameter lives on."""
        out: List[Context] = []
        for v in self.values():
            for c in v.list_ctx():
                if c not in out:
                    out.append(c)
        return out

    def setattr(self, name: str, value) -> None:
        """Set attribute `name` (e.g. 'grad_req', 'lr_mult') on every parameter."""
        for v in self.values():
            setattr(v, name, value)

    def save(self, filename: str, strip_prefix: str = "") -> None:
        """Save every parameter's value (names without `strip_prefix`) in MXNet's .params format."""
        arg_dict = {}
        for param in self.values():
            if not param.name.startswith(strip_prefix):
                raise ParameterError(
                    f"Prefix '{strip_prefix}' is to be striped before saving, but Parameter's name '{param.name}' "
                    f"does not start with '{strip_prefix}'. this may be due to your Block shares parameters from "
                    "other Blocks or you forgot to use 'with name_scope()' when creating child blocks.")
            arg_dict[param.name[len(strip_prefix):]] = param._reduce()
        nd.save(filename, arg_dict)

    def load(self, filename: str, ctx=None, allow_missing: bool = False, ignore_extra: bool = False,
             restore_prefix: str = "", cast_dtype: bool = False, dtype_source: str = "current") -> None:
        """Load values saved by `save` (or `arg:`/`aux:` names of a checkpoint) into the parameters."""
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise ParameterMismatchError(
                        f"restore_prefix is '{restore_prefix}' but Parameters name '{name}' does not start with "
                        f"'{restore_prefix}'")
        loaded = nd.load(filename)
        if not isinstance(loaded, dict):
            raise ParameterError(f"{filename}: expected named arrays, found an unnamed list")
        self.load_dict(loaded, ctx, allow_missing, ignore_extra, restore_prefix, filename, cast_dtype, dtype_source)

    def load_dict(self, param_dict: Dict[str, NDArray], ctx=None, allow_missing: bool = False,
                  ignore_extra: bool = False, restore_prefix: str = "", filename: Optional[str] = None,
                  cast_dtype: bool = False, dtype_source: str = "current") -> None:
        """Load named arrays into the parameters; checks everything first, so a failure changes nothing."""
        arg_dict = {restore_prefix + (k[4:] if k.startswith(("arg:", "aux:")) else k): v
                    for k, v in param_dict.items()}
        where = f"file: {filename}" if filename else "param_dict"
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise ParameterMismatchError(
                        f"Parameter '{name}' is missing in {where}, which contains parameters: "
                        f"[{_brief_print_list(arg_dict)}]. Please make sure source and target networks have the same "
                        "prefix.")
        for name, value in arg_dict.items():
            if name not in self._params:
                if not ignore_extra:
                    raise ParameterMismatchError(
                        f"Parameter '{name}' loaded from {where} is not present in ParameterDict, choices are: "
                        f"[{_brief_print_list(self.keys())}]. Set ignore_extra to True to ignore. Please make sure source "
                        "and target networks have the same prefix.")
                continue
            self._params[name]._check_loadable(value, cast_dtype, dtype_source)
        for name, value in arg_dict.items():
            if name in self._params:
                self._params[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)
