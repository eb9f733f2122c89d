"""Gluon blocks (MXNet 1.9.1's `mx.gluon.Block`, `HybridBlock`, `SymbolBlock`).

A `Block` is imperative Python code over NDArrays with named, nested parameters.  A
`HybridBlock` writes its computation once as `hybrid_forward(F, x, ...)`: with `F = mx.nd` it
runs op by op (debuggable); after `hybridize()` it is traced once with `F = mx.sym` and the
graph runs on ember's executor (passes, memory plan, engine) through `CachedGraph`.
"""
from __future__ import annotations

import os
import re
import threading
import warnings
import weakref
from collections import OrderedDict, defaultdict
from typing import Callable, Dict, List, Optional

import numpy as np

from .. import initializer
from .. import ndarray as nd_mod
from .. import symbol as sym_mod
from ..base import EmberError
from ..context import is_current
from ..imperative import autograd_state as _ag
from ..imperative.ndarray import NDArray
from ..symbolic import np_symbol
from ..symbolic.naming import NameManager, Prefix
from ..symbolic.symbol import Symbol
from ..util import is_np_array
from . import model_file, np_semantics
from .cached_graph import CachedGraph
from .parameter import (DeferredInitializationError, Parameter, ParameterDict, ParameterMismatchError,
                        SparseStorageError, mx_real_t)
from .utils import HookHandle, _brief_print_list, _indent


_ROW_SPARSE_ID = "1"  # a variable's __storage_type__ attribute for row_sparse (MXNet's storage type id)


class HybridizeError(EmberError, ValueError):
    """A block could not be traced into a graph, or was called in a way its cached graph cannot serve."""


class SummaryError(HybridizeError, AssertionError):
    """summary() was called on a hybridized block (MXNet asserts here)."""


class _BlockScope:
    """The scope `with block.name_scope():` opens: children made inside get prefixes under the block."""

    _current = threading.local()

    def __init__(self, block: "Block", _own: bool = False):
        # a block's own scope (_own) refers to it weakly: a block and its scope would otherwise form
        # a cycle that keeps the block (and its cached executors' storage) alive until Python's cycle
        # collector happens to run; a scope made for any other block keeps it alive, as MXNet's
        self._block_ref = weakref.ref(block) if _own else (lambda: block)
        self._counter: Dict[str, int] = {}
        self._old_scope = None
        self._name_scope = None

    @property
    def _block(self) -> "Block":
        return self._block_ref()

    @staticmethod
    def create(prefix: Optional[str], params: Optional[ParameterDict], hint: str):
        """The prefix and parameter dict of a new block (MXNet's naming: 'dense0_', 'model_conv1_')."""
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                prefix = NameManager.current.get(None, hint) + "_"
            params = ParameterDict(prefix) if params is None else ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        self._name_scope = Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, *exc):
        if self._block._empty_prefix:
            return
        self._name_scope.__exit__(*exc)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope


# -- nested inputs and outputs --------------------------------------------------------------
def _flatten(args, what: str):
    """Flat list of arrays/symbols/None and a format that `_regroup` rebuilds the nesting from."""
    if isinstance(args, NDArray):
        return [args], 0
    if isinstance(args, Symbol):
        n = len(args.list_outputs())
        return [args], (n if n > 1 else 0)
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise HybridizeError(f"When hybridized, the {what} of a HybridBlock must be (nested) lists of Symbol or "
                             f"NDArray, but got {args!r} of type {type(args).__name__}")
    flat, fmts = [], []
    for a in args:
        f, fmt = _flatten(a, what)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


def _regroup(args, fmt):
    def merge(args, fmt):
        if isinstance(fmt, int):
            if fmt == 0:
                return args[0], args[1:]
            if fmt == -1:
                if args[0] is not None:
                    raise HybridizeError("a HybridBlock hybridized with None for an input was called with a value "
                                         "there")
                return None, args[1:]
            return args[:fmt], args[fmt:]
        ret = []
        for f in fmt:
            r, args = merge(args, f)
            ret.append(r)
        return ret, args
    return merge(args, fmt)[0]


def _leaves(args):
    if isinstance(args, (list, tuple)):
        for a in args:
            yield from _leaves(a)
    else:
        yield args


_ONE_INPUT = [0]  # the input format of a block called with one array


def _same_but_trailing_none(fmt, cached) -> bool:
    """Whether two top-level input formats differ only by trailing None inputs (MXNet accepts that)."""
    if not isinstance(fmt, list) or not isinstance(cached, list):
        return False
    short, long_ = (fmt, cached) if len(fmt) < len(cached) else (cached, fmt)
    return len(short) != len(long_) and long_[:len(short)] == short and all(f == -1 for f in long_[len(short):])


def _input_kinds(args):
    """(has a Symbol, has an NDArray, contexts of the NDArrays, first context) over nested args
    (other values, such as Python scalars, are allowed here: only hybridized calls refuse them)."""
    flat = list(_leaves(args))
    has_sym = any(isinstance(a, Symbol) for a in flat)
    arrays = [a for a in flat if isinstance(a, NDArray)]
    ctxs = {a.context for a in arrays}
    return has_sym, bool(arrays), ctxs, (arrays[0].context if arrays else None)


class Block:
    """Base class of every layer and model: parameters, children, hooks, save/load (MXNet's gluon.Block).

    Subclasses create children and parameters in `__init__` (inside `with self.name_scope():`
    for MXNet's names) and define `forward(*args)`.
    """

    def __init__(self, prefix: Optional[str] = None, params: Optional[ParameterDict] = None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self, _own=True)
        self._children: "OrderedDict[str, Block]" = OrderedDict()
        self._reg_params: Dict[str, Parameter] = {}
        self._forward_hooks: "OrderedDict[int, Callable]" = OrderedDict()
        self._forward_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()

    def __repr__(self) -> str:
        mods = "\n".join(f"  ({key}): {_indent(repr(block), 2)}"
                         for key, block in self.__dict__.items() if isinstance(block, Block))
        return f"{type(self).__name__}(\n{mods}\n)"

    def __setattr__(self, name: str, value) -> None:
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError(f"Changing attribute type for {name} from {type(existing)} to {type(value)} "
                                "is not allowed.")
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params:
                raise ParameterMismatchError(
                    f"Overriding Parameter attribute {name} is not allowed. If you want to share parameters "
                    "between blocks, please set 'params' at Block construction instead.")
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _alias(self) -> str:
        return type(self).__name__.lower()

    @property
    def prefix(self) -> str:
        """The prefix of this block's names ('dense0_')."""
        return self._prefix

    @property
    def name(self) -> str:
        """The block's name: its prefix without the trailing '_'."""
        return self._name

    def name_scope(self) -> _BlockScope:
        """`with self.name_scope():` makes children and symbol names under this block's prefix."""
        return self._scope

    @property
    def params(self) -> ParameterDict:
        """This block's own parameters (children's not included: see collect_params)."""
        return self._params

    def collect_params(self, select: Optional[str] = None) -> ParameterDict:
        """This block's and its children's parameters, optionally those whose names match regex `select`."""
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({n: p for n, p in self.params.items() if pattern.match(n)})
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _check_container_with_block(self) -> None:
        children = set(self._children.values())

        def hides_block(data) -> bool:
            if isinstance(data, (list, tuple)):
                return any(hides_block(d) for d in data)
            if isinstance(data, dict):
                return any(hides_block(d) for d in data.values())
            return isinstance(data, Block) and data not in children

        for k, v in self.__dict__.items():
            if isinstance(v, (list, tuple, dict)) and not (k.startswith("__") or k == "_children") and hides_block(v):
                warnings.warn(f'"{type(self).__name__}.{k}" is an unregistered container with Blocks. Note that '
                              "Blocks inside the list, tuple or dict will not be registered automatically. Make "
                              "sure to register them using register_child() or switching to "
                              "nn.Sequential/nn.HybridSequential instead. ", stacklevel=3)

    def _collect_params_with_prefix(self, prefix: str = "") -> Dict[str, Parameter]:
        """Parameters keyed by their structural names ('0.weight', 'features.3.bias')."""
        if prefix:
            prefix += "."
        ret = {prefix + key: val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    # -- parameters on disk ------------------------------------------------------------------
    def save_parameters(self, filename: str, deduplicate: bool = False) -> None:
        """Save the parameters under their structural names (MXNet's .params format)."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            reverse = {v: k for k, v in params.items()}
            params = {k: v for v, k in reverse.items()}
        nd_mod.save(filename, {key: val._reduce() for key, val in params.items()})

    def save_params(self, filename: str) -> None:
        """[Deprecated] Save with full parameter names; use save_parameters."""
        warnings.warn("save_params is deprecated. Please use save_parameters. Note that if you want load from "
                      "SymbolBlock later, please use export instead.")
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_parameters(self, filename: str, ctx=None, allow_missing: bool = False, ignore_extra: bool = False,
                        cast_dtype: bool = False, dtype_source: str = "current") -> None:
        """Load parameters saved by `save_parameters` (or, with full names, by `save_params`/export).

        Every name, shape and dtype is checked before any value changes, so a failed load
        leaves the current values as they were.
        """
        loaded = nd_mod.load(filename)
        if not isinstance(loaded, dict):
            raise ParameterMismatchError(f"{filename}: expected named arrays, found an unnamed list")
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in k for k in loaded):
            # names without structure: a file of full names (save_params, export)
            self.collect_params().load_dict(loaded, ctx, allow_missing, ignore_extra, self.prefix, filename,
                                            cast_dtype, dtype_source)
            return
        if not allow_missing:
            names_of = defaultdict(list)
            for k, v in params.items():
                names_of[v].append(k)
            for name, param in params.items():
                if not any(p in loaded for p in names_of[param]):
                    raise ParameterMismatchError(
                        f"Parameter '{name}' is missing in file '{filename}', which contains parameters: "
                        f"{_brief_print_list(loaded.keys())}. Set allow_missing=True to ignore missing parameters.")
        for name, value in loaded.items():
            if name not in params:
                if not ignore_extra:
                    raise ParameterMismatchError(
                        f"Parameter '{name}' loaded from file '{filename}' is not present in ParameterDict, which "
                        f"contains parameters {_brief_print_list(params.keys())}. Set ignore_extra=True to ignore. ")
                continue
            params[name]._check_loadable(value, cast_dtype, dtype_source)
        for name, value in loaded.items():
            if name in params:
                params[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

    def load_params(self, filename: str, ctx=None, allow_missing: bool = False, ignore_extra: bool = False) -> None:
        """[Deprecated] Use load_parameters."""
        warnings.warn("load_params is deprecated. Please use load_parameters.")
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def save(self, prefix: str) -> None:
        """Save the model's structure (`<prefix>-model.json`: block names, children, hybridized
        graphs) and parameters (`<prefix>-model.params`), for `load` on a model built the same way."""
        model_file.save(self, prefix)

    def load(self, prefix: str) -> None:
        """Load a model saved by `save` into this one, built by the same code in the same order:
        the saved block names, children's names and hybridized graphs, then the parameters."""
        model_file.load(self, prefix)

    # -- structure ----------------------------------------------------------------------------
    def register_child(self, block: "Block", name: Optional[str] = None) -> None:
        """Make `block` a child (attributes that are Blocks are registered automatically)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook: Callable) -> HookHandle:
        """Call `hook(block, inputs)` before each forward; returns a handle that detaches it."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook: Callable) -> HookHandle:
        """Call `hook(block, inputs, outputs)` after each forward; returns a handle that detaches it."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def apply(self, fn: Callable[["Block"], None]) -> "Block":
        """Call `fn` on every child (recursively), then on this block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init=None, ctx=None, verbose: bool = False, force_reinit: bool = False) -> None:
        """Initialize this block's and its children's parameters (`collect_params().initialize`)."""
        self.collect_params().initialize(init if init is not None else initializer.Uniform(), ctx, verbose,
                                         force_reinit)

    def hybridize(self, active: bool = True, **kwargs) -> None:
        """Hybridize the HybridBlocks among the children (a plain Block itself stays imperative)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype) -> None:
        """Cast every parameter (children's included) to `dtype`."""
        for child in self._children.values():
            child.cast(dtype)
        for param in self.params.values():
            param.cast(dtype)

    def zero_grad(self) -> None:
        """Set the gradients of every parameter to 0."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx) -> None:
        """Move every parameter to `ctx`."""
        self.collect_params().reset_ctx(ctx)

    # -- running ------------------------------------------------------------------------------
    def __call__(self, *args):
        if is_np_array():
            return np_semantics.call(self, args)
        return self._call_with_hooks(args)

    def _call_with_hooks(self, args):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                hook(self, args)
        out = self.forward(*args)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                hook(self, args, out)
        return out

    def forward(self, *args):
        """The computation on NDArrays; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def register_op_hook(self, callback: Callable, monitor_all: bool = False) -> None:
        """Install `callback` on the hybridized HybridBlocks among the children (see HybridBlock)."""
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def summary(self, *inputs) -> None:
        """Print each layer's output shape and parameter count for one forward of `inputs`."""
        summary: "OrderedDict[str, dict]" = OrderedDict()
        seen = set()
        hooks = []

        def shape_str(args) -> str:
            def walk(a):
                if isinstance(a, (list, tuple)):
                    return [walk(x) for x in a]
                return a.shape if isinstance(a, NDArray) else a
            shapes = walk(args)
            return str(shapes)[1:-1] if isinstance(shapes, list) else str(shapes)

        def register(block: Block) -> None:
            if isinstance(block, HybridBlock) and block._active:
                raise SummaryError(f'"{block.name}" must not be hybridized to print summary.')

            def hook(block, _, outputs):
                key = f"{type(block).__name__}-{len(summary)}"
                entry = summary[key] = {"output_shape": shape_str(outputs), "trainable": 0, "shared": 0}
                n = 0
                for p in block.params.values():
                    size = int(np.prod(p.data().shape))
                    n += size
                    entry["trainable"] += 0 if p.grad_req == "null" else size
                    if p in seen:
                        entry["shared"] += size
                    else:
                        seen.add(p)
                entry["n_params"] = n
            from .nn.basic_layers import HybridSequential, Sequential
            if not isinstance(block, (Sequential, HybridSequential)):
                hooks.append(block.register_forward_hook(hook))

        summary["Input"] = {"output_shape": shape_str(list(inputs) if len(inputs) > 1 else inputs[0]),
                            "n_params": 0, "trainable": 0, "shared": 0}
        try:
            self.apply(register)
            self(*inputs)
            line = "{:>20}  {:>42} {:>15}"
            print("-" * 80)
            print(line.format("Layer (type)", "Output Shape", "Param #"))
            print("=" * 80)
            total = trainable = shared = 0
            for layer, e in summary.items():
                print(line.format(layer, str(e["output_shape"]), e["n_params"]))
                total += e["n_params"]
                trainable += e["trainable"]
                shared += e["shared"]
            print("=" * 80)
            print("Parameters in forward computation graph, duplicate included")
            print("   Total params: " + str(total))
            print("   Trainable params: " + str(trainable))
            print("   Non-trainable params: " + str(total - trainable))
            print("Shared params in forward computation graph: " + str(shared))
            print("Unique parameters in model: " + str(total - shared))
            print("-" * 80)
        finally:
            for h in hooks:
                h.detach()


class HybridBlock(Block):
    """A block written as `hybrid_forward(F, x, *args, **params)`, runnable imperatively or as a graph.

    `hybridize()` makes later calls trace the block once per input signature into a symbol
    and run it on ember's executor; under `autograd.record()` each such call is one taped
    node whose backward is the planned gradient graph.
    """

    def __init__(self, prefix: Optional[str] = None, params: Optional[ParameterDict] = None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph: tuple = ()
        self._cached_op: Optional[CachedGraph] = None
        self._inline = False  # record the cached graph's few operators one by one (see _build_cache)
        self._op_by_op = False  # the graph's output shapes depend on values: always run op by op
        self._out_format = None
        self._in_format = None
        self._active = False
        self._flags: List[tuple] = []
        self._callback: Optional[Callable] = None
        self._monitor_all = False

    def __setattr__(self, name: str, value) -> None:
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def register_child(self, block: Block, name: Optional[str] = None) -> None:
        if not isinstance(block, HybridBlock):
            raise HybridizeError(f"Children of HybridBlock must also be HybridBlock, but {block} has type "
                                 f"{type(block)}. If you are using Sequential, please try HybridSequential instead.")
        super().register_child(block, name)
        self._clear_cached_op()

    def hybridize(self, active: bool = True, backend=None, clear: bool = True, static_alloc: bool = False,
                  static_shape: bool = False, inline_limit: int = 2, forward_bulk_size=None,
                  backward_bulk_size=None, **kwargs) -> None:
        """Run later calls as a cached graph (`active=False` goes back to op-by-op execution).

        ember keeps each input signature's planned executor in every mode, which is what
        MXNet's static_alloc/static_shape buy; the flags are accepted for compatibility.
        """
        if backend is not None:
            raise HybridizeError(f"hybridize: ember has no graph backend '{backend}' (partitioning backends are "
                                 "an MXNet extension library feature)")
        self._active = active
        self._flags = [("static_alloc", static_alloc), ("static_shape", static_shape), ("inline_limit", inline_limit)]
        if clear:
            self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn(f'"{self}" is being hybridized while still having forward hook/pre-hook. If "{self}" is a '
                          "child of HybridBlock, the hooks will not take effect.")
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape, inline_limit=inline_limit,
                          forward_bulk_size=forward_bulk_size, backward_bulk_size=backward_bulk_size)

    def optimize_for(self, x, *args, backend=None, clear: bool = False, static_alloc: bool = False,
                     static_shape: bool = False, inline_limit: int = 2, forward_bulk_size=None,
                     backward_bulk_size=None, **kwargs) -> None:
        """Hybridize and build the cached graph for inputs like `x, *args` without running it."""
        self.hybridize(True, backend=backend, clear=clear, static_alloc=static_alloc, static_shape=static_shape,
                       inline_limit=inline_limit, forward_bulk_size=forward_bulk_size,
                       backward_bulk_size=backward_bulk_size, **kwargs)
        has_sym, has_nd, ctxs, first_ctx = _input_kinds([x] + list(args))
        if has_sym or not has_nd:
            raise HybridizeError(f"optimize_for: HybridBlock '{self.name}' needs NDArray inputs to build its graph for")
        with first_ctx:
            self._build_cache(x, *args)

    def cast(self, dtype) -> None:
        self._clear_cached_op()
        super().cast(dtype)

    def _clear_cached_op(self) -> None:
        self._cached_graph = ()
        self._cached_op = None
        self._inline = False
        self._op_by_op = False

    # -- tracing ------------------------------------------------------------------------------
    def _get_graph(self, *args):
        """(input variables, output symbol) of this block traced with F = mx.sym (cached)."""
        if not self._cached_graph:
            flat, self._in_format = _flatten(args, "input")
            real = sum(a is not None for a in flat)
            if real == 0:
                raise HybridizeError(f"HybridBlock '{self.name}': all inputs are None; nothing to trace")
            np_mode = is_np_array()
            inputs, sym_inputs, cnt = [], [], 0
            for a in flat:
                if a is None:
                    inputs.append(None)
                    continue
                v = sym_mod.var(f"data{cnt}" if real > 1 else "data")
                if np_mode and isinstance(a, NDArray):  # np symbols know their shapes (one trace per signature)
                    np_symbol.describe(v, a.shape, a.dtype)
                cnt += 1
                inputs.append(v)
                sym_inputs.append(v)
            grouped = _regroup(inputs, self._in_format)
            params = {k: p.var() for k, p in self._reg_params.items()}
            try:
                with self.name_scope(), np_semantics.running(self) as legacy:
                    if np_mode:
                        grouped = np_semantics.convert(grouped, legacy)
                        params = np_semantics.convert(params, legacy)
                    out = self.hybrid_forward(sym_mod, *(grouped if isinstance(grouped, list) else [grouped]),
                                              **params)
            except HybridizeError:
                raise
            except Exception as e:
                raise HybridizeError(f"HybridBlock '{self.name}' ({type(self).__name__}) could not be traced into a "
                                     f"graph: {type(e).__name__}: {e}. hybrid_forward must only use F.* operators "
                                     "on its inputs (no Python control flow on array values, no .asnumpy()).") from e
            np_semantics.check_one_kind(self, out)
            out = np_semantics.convert(out, True)  # the cached graph is a legacy symbol
            out, self._out_format = _flatten(out, "output")
            self._cached_graph = sym_inputs, (sym_mod.Group(out) if len(out) > 1 else out[0])
        return self._cached_graph

    def _infer_attrs(self, infer_fn: str, attr: str, *args) -> None:
        inputs, out = self._get_graph(*args)
        flat = [a for a in _flatten(args, "input")[0] if a is not None]
        known = {i.name: getattr(a, attr) for i, a in zip(inputs, flat)}
        arg_attrs, _, aux_attrs = getattr(out, infer_fn)(**known)
        if arg_attrs is None:
            raise HybridizeError(f"HybridBlock '{self.name}': cannot infer the {attr}s of its parameters from "
                                 f"inputs {known}")
        found = dict(zip(out.list_arguments(), arg_attrs))
        found.update(zip(out.list_auxiliary_states(), aux_attrs))
        for p in self.collect_params().values():
            if p.name in found and found[p.name] is not None:
                setattr(p, attr, found[p.name])

    def infer_shape(self, *args) -> None:
        """Fill in the parameters' unknown dimensions from the shapes of `args`."""
        self._infer_attrs("infer_shape_partial", "shape", *args)

    def infer_type(self, *args) -> None:
        """Set the parameters' dtypes from the dtypes of `args`."""
        self._infer_attrs("infer_type", "dtype", *args)

    def _deferred_infer_shape(self, *args) -> None:
        try:
            self.infer_shape(*args)
        except Exception as e:
            raise ValueError(f"Deferred initialization failed because shape cannot be inferred. {e}") from e

    # -- running ------------------------------------------------------------------------------
    def _build_cache(self, *args) -> None:
        data, out = self._get_graph(*args)
        data_names = [d.name for d in data]
        collected = self.collect_params()
        # by name, and by dictionary key: after Block.load a saved graph names parameters by the
        # keys their blocks' restored names give them
        params = {p.name: p for p in collected.values()}
        params.update(collected.items())
        graph_inputs = out.list_inputs()
        unknown = [n for n in graph_inputs if n not in params and n not in data_names]
        if unknown:
            raise HybridizeError(f"Unknown input to HybridBlock '{self.name}': {_brief_print_list(unknown)}")
        unused = [f"{i}-th" for i, n in enumerate(data_names) if n not in graph_inputs]
        if unused:
            warnings.warn(f"The {', '.join(unused)} input to HybridBlock is not used by any computation. "
                          "Is this intended?", stacklevel=4)
        used = {id(params[n]) for n in graph_inputs if n in params}
        unused_params = list(dict.fromkeys(p.name for p in collected.values() if id(p) not in used))
        if unused_params:
            warnings.warn(f"Parameter {', '.join(unused_params)} is not used by any computation. Is this intended?",
                          stacklevel=4)
        flat = [a for a in _flatten(args, "input")[0] if a is not None]
        try:
            for n in graph_inputs:
                if n in params:
                    params[n].data(flat[0].context)
        except DeferredInitializationError:
            self._deferred_infer_shape(*args)
            for n in graph_inputs:
                if n in params:
                    params[n]._finish_deferred_init()
        self._cached_op = CachedGraph(out, data_names, {n: params[n] for n in graph_inputs if n in params},
                                      block_name=self.name)
        # MXNet's inlining: a graph of at most `inline_limit` operators (static_alloc off) is recorded op by
        # op under autograd, as if not hybridized, instead of as one cached-op step
        flags = dict(self._flags)
        self._inline = not flags.get("static_alloc", False) and \
            sum(1 for n in out._nodes() if n.op is not None) <= flags.get("inline_limit", 2)
        # MXNet's dynamic-shape CachedOp: an op sized by its input values (unique) has no static plan
        self._op_by_op = any(n.op is not None and n.op.value_dependent_shape for n in out._nodes())

    def _call_cached_op(self, *args):
        if is_np_array():
            # a graph traced under NumPy semantics is built for its inputs' shapes and dtypes (the mx.np
            # functions pick casts and reshapes from them): another signature is traced anew
            sig = tuple((tuple(a.shape), a.dtype) if isinstance(a, NDArray) else None
                        for a in _flatten(args, "input")[0])
            if self._cached_op is not None and getattr(self, "_np_signature", sig) != sig:
                self._clear_cached_op()
            self._np_signature = sig
        if self._cached_op is None:
            self._build_cache(*args)
        flat, fmt = _flatten(args, "input")
        if fmt != self._in_format and not _same_but_trailing_none(fmt, self._in_format):
            raise HybridizeError(f"The argument structure of HybridBlock '{self.name}' does not match the cached "
                                 f"version: it was hybridized with input format {self._in_format}, called with "
                                 f"{fmt}. Call hybridize() again to trace it anew.")
        inputs = [a for a in flat if a is not None]
        if (self._inline and _ag.is_recording()) or self._op_by_op:
            return self._forward_imperative(inputs[0].context, *args)
        self._cached_op.set_op_hook(self._callback, self._monitor_all)
        out = self._cached_op(inputs)
        return _regroup(out, self._out_format)

    def forward(self, x, *args):
        """Run `hybrid_forward` on NDArrays (op by op, or as the cached graph once hybridized) or Symbols."""
        if not args and self._active and type(x) is NDArray and self._cached_op is not None \
                and self._in_format == _ONE_INPUT and not (self._inline and _ag.is_recording()) \
                and not self._op_by_op:
            # the common hybridized call, one array in (a DataLoader's transforms run it per sample):
            # what the general path below checks and regroups holds trivially
            ctx = x.context
            self._cached_op.set_op_hook(self._callback, self._monitor_all)
            if is_current(ctx):  # already the default context: entering it again changes nothing
                out = self._cached_op([x])
            else:
                with ctx:
                    out = self._cached_op([x])
            return out[0] if self._out_format == 0 else _regroup(out, self._out_format)
        has_sym, has_nd, ctxs, first_ctx = _input_kinds([x] + list(args))
        if has_sym and has_nd:
            raise HybridizeError("In HybridBlock, we do not support mixed NDArrays and Symbols types for the "
                                 "input. Please check the type of the args.")
        if not has_sym and not has_nd:
            raise HybridizeError("In HybridBlock, there must be one NDArray or one Symbol in the input. Please "
                                 "check the type of the args.")
        if has_nd:
            if self._active:
                if len(ctxs) > 1:
                    raise HybridizeError(f"HybridBlock '{self.name}': inputs on several contexts {sorted(map(str, ctxs))}; "
                                         "a hybridized block takes its inputs on one context")
                with first_ctx:
                    return self._call_cached_op(x, *args)
            return self._forward_imperative(first_ctx, x, *args)
        params = {k: v.var() for k, v in self._reg_params.items()}
        if is_np_array():
            params = np_semantics.convert(params, np_semantics.current_is_legacy())
        with self.name_scope():
            return self.hybrid_forward(sym_mod, x, *args, **params)

    def _forward_imperative(self, ctx, x, *args):
        """`hybrid_forward` with F = mx.nd, op by op on `ctx`."""
        with ctx:
            try:
                params = {k: v.data(ctx) for k, v in self._reg_params.items()}
            except DeferredInitializationError:
                self._deferred_infer_shape(x, *args)
                for v in self.params.values():
                    v._finish_deferred_init()
                params = {k: v.data(ctx) for k, v in self._reg_params.items()}
            if is_np_array():
                params = np_semantics.convert(params, np_semantics.current_is_legacy())
            return self.hybrid_forward(nd_mod, x, *args, **params)

    def register_op_hook(self, callback: Callable, monitor_all: bool = False) -> None:
        """Call `callback(node_name, op_name, array)` for every operator output (with monitor_all, every
        input too) of the hybridized graph of this block and its children."""
        self._callback = callback
        self._monitor_all = monitor_all
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """The computation, written with `F` (mx.nd or mx.sym); subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must define hybrid_forward()")

    # -- export -------------------------------------------------------------------------------
    def export(self, path: str, epoch: int = 0, remove_amp_cast: bool = True):
        """Write `path-symbol.json` and `path-%04d.params` (MXNet's files for SymbolBlock.imports / load_checkpoint)."""
        if not self._cached_graph:
            raise HybridizeError("Please first call block.hybridize() and then run forward with this block at least "
                                 "once before calling export.")
        sym = self._cached_graph[1]
        sym.save(f"{path}-symbol.json")
        arg_names = set(sym.list_arguments())
        aux_names = set(sym.list_auxiliary_states())
        arg_dict = {}
        for name, param in self.collect_params().items():
            if name in arg_names:
                arg_dict[f"arg:{name}"] = param._reduce()
            elif name in aux_names:
                arg_dict[f"aux:{name}"] = param._reduce()
            else:
                warnings.warn(f'Parameter "{name}" is not found in the graph. ', stacklevel=3)
        params_file = f"{path}-{epoch:04d}.params"
        nd_mod.save(params_file, arg_dict)
        return f"{path}-symbol.json", params_file

    def memory_plan(self, training: Optional[bool] = None) -> str:
        """The memory plan of the hybridized graph's most recently bound executor (after one call);
        `training=True`/`False` picks the latest one with/without the gradient graph."""
        plan = None if self._cached_op is None else self._cached_op.memory_plan(training)
        if plan is None:
            raise HybridizeError(f"HybridBlock '{self.name}' has no cached graph yet"
                                 f"{'' if training is None else ' for training' if training else ' for inference'}: "
                                 "hybridize() it and call it once")
        return plan


class SymbolBlock(HybridBlock):
    """A block made from a symbol: `inputs` are its data, every other argument and aux state a parameter.

    Loaded with `SymbolBlock.imports` from files `HybridBlock.export` (or MXNet) wrote; it is a
    HybridBlock, so it trains (gradients flow into its parameters) and nests in other blocks.
    """

    @staticmethod
    def imports(symbol_file: str, input_names, param_file: Optional[str] = None, ctx=None,
                allow_missing: bool = False, ignore_extra: bool = False) -> "SymbolBlock":
        """A SymbolBlock from an exported `*-symbol.json` and (optionally) its `*.params`."""
        sym = sym_mod.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        inputs = [sym_mod.var(n) for n in input_names]
        ret = SymbolBlock(sym, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra, cast_dtype=True,
                                      dtype_source="saved")
        return ret

    def __init__(self, outputs, inputs, params: Optional[ParameterDict] = None):
        super().__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        out, self._out_format = _flatten(outputs, "output")
        input_names = set()
        for s in syms:
            if not isinstance(s, Symbol):
                raise TypeError(f"SymbolBlock inputs must be Symbols, got {type(s).__name__}")
            if len(s.get_internals().list_outputs()) != 1:
                raise HybridizeError(f"Input symbols must be variable, but {s} is an output of operators")
            input_names.add(s.name)
        for o in out:  # as MXNet: a SymbolBlock runs dense arrays only
            for node in o.get_internals():
                if node.attr("__storage_type__") == _ROW_SPARSE_ID:
                    raise SparseStorageError(f"SymbolBlock doesn't support Parameter '{node.name}' because its "
                                             "storage type is 'row_sparse'.")
        out = sym_mod.Group(out) if len(out) > 1 else out[0]
        args = out.list_arguments()
        missing = sorted(n for n in input_names if n not in out.list_inputs())
        if missing:
            raise HybridizeError(f"SymbolBlock: inputs {missing} are not arguments of the symbol "
                                 f"(its arguments: {_brief_print_list(args)})")
        for name in args:
            if name not in input_names:
                self.params.get(name, allow_deferred_init=True, dtype=mx_real_t)
        for name in out.list_auxiliary_states():
            if name not in input_names:
                self.params.get(name, grad_req="null", allow_deferred_init=True, dtype=mx_real_t)
        self._cached_graph = syms, out
        cut = len(os.path.commonprefix(list(self._params.keys())))
        self._reg_params = {key[cut:]: val for key, val in self._params.items()}

    def __repr__(self) -> str:
        syms, out = self._cached_graph
        return f"{type(self).__name__}(\n{out} : {len(syms)} -> {len(out.list_outputs())}\n)"

    def forward(self, x, *args):
        if isinstance(x, NDArray):
            with x.context:
                return self._call_cached_op(x, *args)
        if not isinstance(x, Symbol):
            raise TypeError(f"SymbolBlock requires the first argument to forward be either Symbol or NDArray, "
                            f"but got {type(x).__name__}")
        flat, fmt = _flatten([x] + list(args), "input")
        if fmt != self._in_format:
            raise HybridizeError(f"SymbolBlock: invalid input format {fmt}, expected {self._in_format}")
        syms, out = self._cached_graph
        composed = out(**{s.name: v for s, v in zip(syms, flat)})
        outs = [composed[i] for i in range(len(composed.list_outputs()))]
        return _regroup(outs, self._out_format)

    def _clear_cached_op(self) -> None:
        graph = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = graph

    def _build_cache(self, *args) -> None:
        super()._build_cache(*args)
        # no Python code to run op by op: a graph with value-dependent shapes stays on the executor,
        # whose shape inference names the node it cannot size
        self._op_by_op = False

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError("SymbolBlock runs its symbol; it has no hybrid_forward")

    def cast(self, dtype) -> None:
        self._clear_cached_op()
        super().cast(dtype)
        if np.dtype(dtype).name == "float16":
            # batch-norm statistics and scales stay float32, as MXNet keeps them
            inputs = self._cached_graph[1].get_internals().list_inputs()
            for stat, rest in (("running_var", ("running_mean", "gamma", "beta")),
                               ("moving_var", ("moving_mean", "gamma", "beta"))):
                for n in inputs:
                    if n.endswith(stat):
                        base = n[:-len(stat)]
                        sibs = [base + t for t in rest]
                        if all(s in inputs for s in sibs):
                            for s in [n] + sibs:
                                if s in self.params:
                                    self.params[s].cast("float32")
