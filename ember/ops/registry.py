"""The operator registry: the single table every ember component reads.

Each operator is one `OpDef`: its name and MXNet aliases, typed attributes,
shape/dtype inference, kernels per device, gradient, in-place options, which
inputs it mutates, the resources it needs, and every other fact a caller acts on
(elementwise, shape-only inputs, recompute cost, ufunc form): nothing about an
op is kept anywhere else.  Imperative calls (`mx.nd.*`),
symbolic executors and autograd all look the definition up here at run time,
so `override(name, device, fn)` swaps a kernel everywhere at once.

Kernel convention (MXNet's FCompute): ``kernel(ctx, attrs, inputs, outputs, aux)``
where ``inputs``/``outputs``/``aux`` are lists of numpy (or CuPy) arrays and the
outputs are preallocated: the kernel writes into them (``np.add(a, b, out=o)``,
``o[...] = value``) and returns nothing.  Aux states (BatchNorm's moving
statistics) are written in place.  Inputs listed in ``mutates`` are written in
place too (optimizer updates).

Gradient convention: ``gradient(F, attrs, inputs, outputs, out_grads)`` returns
one entry per input (None where no gradient flows).  ``F`` is the op namespace
being differentiated through, ``ember.nd`` for autograd and ``ember.sym`` for
the symbolic gradient pass, so the same gradient definition builds NDArrays or
graph nodes, and reads every op it uses from this registry.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ..base import OperatorError

REQUIRED = object()

Shape = Tuple[int, ...]
Names = Union[Sequence[str], Callable[[dict], Sequence[str]]]

_DTYPE_ALIASES = {
    "float32": np.float32, "float64": np.float64, "float16": np.float16,
    "uint8": np.uint8, "int8": np.int8, "int32": np.int32, "int64": np.int64,
    "bool": np.bool_, "real_t": np.float32,
}


def as_dtype(value: Any) -> np.dtype:
    """Normalise a dtype given as MXNet string, numpy type or dtype."""
    if isinstance(value, str) and value in _DTYPE_ALIASES:
        return np.dtype(_DTYPE_ALIASES[value])
    try:
        return np.dtype(value)
    except TypeError as e:
        raise TypeError(f"unsupported dtype {value!r}") from e


def _parse_literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


@dataclass
class Attr:
    """A typed operator attribute.

    kind: 'int', 'float', 'bool', 'str', 'shape' (tuple of ints, MXNet's TShape),
    'dtype', 'any' (kept as given), or 'int_or_none' / 'float_or_none' /
    'shape_or_none'.  `choices` restricts 'str'.  Values may arrive as strings
    (MXNet's JSON keeps every attribute as a string) and are parsed.
    """

    kind: str
    default: Any = REQUIRED
    choices: Optional[Tuple[str, ...]] = None
    doc: str = ""

    def parse(self, value: Any, op: str, name: str) -> Any:
        kind = self.kind
        if kind.endswith("_or_none"):
            if value is None or (isinstance(value, str) and value.strip() in ("None", "")):
                return None
            kind = kind[: -len("_or_none")]
        try:
            return _PARSERS[kind](self, value)
        except (ValueError, TypeError, SyntaxError) as e:
            raise OperatorError(f"{op}: invalid value {value!r} for attribute '{name}' ({self.kind} expected): {e}") from None

    def format(self, value: Any) -> str:
        """The string MXNet writes for this value in symbol JSON."""
        if value is None:
            return "None"
        if self.kind.startswith("shape"):
            return "(" + ", ".join(str(int(v)) for v in value) + ("," if len(value) == 1 else "") + ")"
        if self.kind == "dtype":
            return np.dtype(value).name
        if self.kind == "bool":
            return "True" if value else "False"
        return str(value)


def _p_int(attr: Attr, v):
    if isinstance(v, str):
        v = _parse_literal(v.strip())
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer, float, np.floating)):
        raise ValueError("not an integer")
    if isinstance(v, (float, np.floating)) and float(v) != int(v):
        raise ValueError("not an integer")
    return int(v)


def _p_float(attr: Attr, v):
    if isinstance(v, str):
        v = v.strip()
    return float(v)


def _p_bool(attr: Attr, v):
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("true", "1"):
            return True
        if s in ("false", "0"):
            return False
        raise ValueError("not a boolean")
    if isinstance(v, (bool, np.bool_, int, np.integer)):
        return bool(v)
    raise ValueError("not a boolean")


def _p_str(attr: Attr, v):
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        v = np.dtype(v).name  # string dtype attributes (random ops' dtype) take numpy dtypes too
    if not isinstance(v, str):
        v = str(v)
    if attr.choices is not None and v not in attr.choices:
        raise ValueError(f"must be one of {list(attr.choices)}")
    return v


def _p_shape(attr: Attr, v):
    if isinstance(v, str):
        v = _parse_literal(v.strip())
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),)
    if isinstance(v, (list, tuple)):
        out = []
        for x in v:
            if x is None:
                out.append(None)
            elif isinstance(x, (int, np.integer)) and not isinstance(x, bool):
                out.append(int(x))
            else:
                raise ValueError("not a tuple of integers")
        return tuple(out)
    raise ValueError("not a tuple of integers")


def _p_dtype(attr: Attr, v):
    return as_dtype(v)


def _p_any(attr: Attr, v):
    return v


_PARSERS = {"int": _p_int, "float": _p_float, "bool": _p_bool, "str": _p_str,
            "shape": _p_shape, "dtype": _p_dtype, "any": _p_any}


class OpContext:
    """What a kernel may use besides its arrays: the array module, train flag, device and RNG."""

    __slots__ = ("xp", "is_train", "device", "rng")

    def __init__(self, xp, is_train: bool = False, device=None, rng=None):
        self.xp = xp
        self.is_train = is_train
        self.device = device
        self.rng = rng


def _per_call(spec, attrs: dict) -> list:
    """A field that is either a sequence or a callable attrs -> sequence, for one call's attrs."""
    return list(spec(attrs)) if callable(spec) else list(spec)


UFUNC_FORMS = ("binary", "scalar", "rscalar", "unary")


class UfuncForm(NamedTuple):
    """The one numpy ufunc call an op's CPU kernel is, on outputs whose dtype kind is in `kinds`.

    binary:  ufunc(lhs, rhs, out=out)                       (numpy's default casting, "same_kind")
    scalar:  ufunc(data, s, out=out, casting="unsafe")   s: attrs["scalar"] (or `constant`), cast to
                                                         data's dtype
    rscalar: ufunc(s, data, out=out, casting="unsafe")   unless data is floating point (as MXNet's DType(s))
    unary:   ufunc(data, out=out, casting="unsafe")

    The imperative tiny-op path (ember/imperative/fastpath.py) then calls the ufunc directly (the
    operator forms: binary, and scalar ones taking attrs["scalar"]); executors call it, or run
    numpy's inner loop for it natively (ember/ops/ufunc_loops.py).
    """

    form: str
    ufunc: Callable
    kinds: str = "biuf"
    constant: Optional[float] = None  # scalar forms: the scalar operand, fixed (relu: maximum(data, 0))
    # executors run the kernel instead from this many output elements on (None: never): where the
    # kernel has a faster loop than the ufunc's (relu's native one; numpy's maximum with a scalar
    # runs its scalar loop), once the call's Python cost is small beside the pass
    kernel_from: Optional[int] = None


@dataclass
class OpDef:
    """One operator: everything ember needs to run, infer and differentiate it."""

    name: str
    attrs: Dict[str, Attr] = field(default_factory=dict)
    inputs: Names = ("data",)
    outputs: Names = ("output",)
    aux: Names = ()
    infer_shape: Optional[Callable] = None
    infer_type: Optional[Callable] = None
    # Backward inference (MXNet's FInferShape/FInferType see output values too): (attrs, in_values,
    # out_values) -> input values implied by known outputs (None: nothing learned).  Defaults to the
    # `.backward` of the infer function (same_shape / same_type provide one).
    infer_shape_backward: Optional[Callable] = None
    infer_type_backward: Optional[Callable] = None
    kernels: Dict[str, Callable] = field(default_factory=dict)
    gradient: Optional[Callable] = None
    # Autograd's direct form of `gradient`: (F, attrs, inputs, outputs, out_grads, dests) may write
    # an input's gradient straight into dests[i].grad (a leaf variable's buffer) and return
    # autograd_tape.WRITTEN for it (FullyConnected's weight, a hybridized block's parameters).
    gradient_into: Optional[Callable] = None
    # `gradient` (and `gradient_into`) take needed= (per input: does anyone want its gradient) and
    # may return None for the others without computing them (FullyConnected's first layer).
    gradient_takes_needed: bool = False
    # `gradient` also takes aux= (the aux states' arrays, or symbols in a graph), for a backward that
    # reads or updates them (IdentityAttachKLSparseReg's moving average is updated by its backward)
    gradient_takes_aux: bool = False
    # (input, output) pairs that may share storage; a callable attrs -> pairs when they depend on
    # attributes (multi_sgd_update: weight i is input 2*i and output i)
    inplace: Union[Sequence[Tuple[int, int]], Callable[[dict], Sequence[Tuple[int, int]]]] = ()
    # indices of inputs written in place; a callable attrs -> indices when they depend on attributes
    # (MXNet's FMutateInputs: multi_sgd_mom_update's momenta are inputs 2, 5, 8, ...)
    mutates: Union[Sequence[int], Callable[[dict], Sequence[int]]] = ()
    resources: Sequence[str] = ()
    aliases: Sequence[str] = ()
    num_visible_outputs: Optional[Callable[[dict], int]] = None
    key_var_num_args: Optional[str] = None
    # Attributes a variable composed into an input (by input name) gets unless it has them already:
    # MXNet's FSetInputVarAttrOnCompose (prelu's gamma variable gets '__init__' Constant 0.25).
    input_var_attrs: Dict[str, Dict[str, str]] = field(default_factory=dict)
    # Output element i reads only element i of each input, all of it before writing, so an output
    # may share an input's elements (imperative out= aliasing an input needs no scratch copy).
    elementwise: bool = False
    # Inputs read for their shape (and dtype) only, never their values (a callable attrs -> positions
    # for variable arity): a memory planner may reuse their bytes before the op runs.
    shape_only_inputs: Union[Sequence[int], Callable[[dict], Sequence[int]]] = ()
    # Cost class: memory mirroring never recomputes an expensive op (MXNet's list), and a graph or
    # autograd tape about to run one first wakes the CPU team (native.pool_prewake).
    expensive: bool = False
    # Graph inference may probe the shape function with stand-in sizes for unknown dimensions to learn
    # the dimensions that do not depend on them; False keeps the outputs unknown until the function
    # itself can tell (MXNet's `where` knows nothing before its condition's shape is whole).
    probe_partial_shapes: bool = True
    # Output shapes depend on the input *values* (unique, boolean_mask): shape inference leaves them
    # unknown, the function calling the op sizes them from the values, and a hybridized block whose
    # graph holds such an op runs op by op (MXNet's dynamic-shape CachedOp) instead of on an executor.
    value_dependent_shape: bool = False
    # The ufunc call the CPU kernel registered here is exactly; see `cpu_ufunc`.
    ufunc_form: Optional[UfuncForm] = None
    # The op whose current kernel this one runs (elemwise_add runs broadcast_add's, so overriding one
    # changes both): without kernels of its own it gets one that looks that op's kernel up at each call,
    # and that op's ufunc form is this one's too.
    kernel_of: Optional[str] = None
    # A step that runs a whole graph (a hybridized block's taped call): (its Symbol, the names of its
    # inputs in the step's input order), so `autograd.get_symbol` can show it as one `_CachedOp` node.
    subgraph: Optional[tuple] = None
    # Storage-type inference (MXNet's FInferStorageType): (attrs, in_stypes) -> out_stypes, in_stypes
    # being the inputs' then the aux states' ('default', 'row_sparse' or 'csr').  None: every output is
    # 'default' (the op has dense kernels only; sparse inputs are read densely, MXNet's storage
    # fallback).  Imperative sparse dispatch and executors both give results these storage types; a
    # rule may raise MXNetError for a combination the op refuses (BatchNorm's fix_gamma on sparse input).
    infer_stype: Optional[Callable] = None
    # On a sparse input at this position, the result is computed at that input's stored positions only
    # and keeps its sparsity pattern (MXNet's _scatter_* ops); a dense input gives the plain op's result.
    keeps_pattern_of: Optional[int] = None
    doc: str = ""

    def __post_init__(self):
        if self.ufunc_form is not None and self.ufunc_form.form not in UFUNC_FORMS:
            raise ValueError(f"{self.name}: ufunc form must be one of {UFUNC_FORMS}, got {self.ufunc_form.form!r}")
        if self.kernel_of is not None and not self.kernels:
            self.kernels = {"any": _kernel_of(get(self.kernel_of))}
        self._ufunc_kernel = self.kernels.get("cpu") or self.kernels.get("any")
        if self.infer_shape_backward is None:
            self.infer_shape_backward = getattr(self.infer_shape, "backward", None)
        if self.infer_type_backward is None:
            self.infer_type_backward = getattr(self.infer_type, "backward", None)

    # -- attributes ---------------------------------------------------------
    def parse_attrs(self, given: Dict[str, Any]) -> Dict[str, Any]:
        """Parse and check attributes, filling defaults; unknown or missing ones are errors, except
        that an op without any attribute ignores what it is given, as MXNet's operators without a
        parameter struct do (`broadcast_maximum(a, b, axis=1)` runs there)."""
        out = {}
        for key, value in given.items():
            spec = self.attrs.get(key)
            if spec is None:
                if (key.startswith("__") and key.endswith("__")) or not self.attrs:
                    continue  # symbol-level attributes such as __lr_mult__ are not op parameters
                known = ", ".join(sorted(self.attrs)) or "none"
                raise OperatorError(f"{self.name}: unknown attribute '{key}' (known attributes: {known})")
            out[key] = spec.parse(value, self.name, key)
        for key, spec in self.attrs.items():
            if key not in out:
                if spec.default is REQUIRED:
                    raise OperatorError(f"{self.name}: required attribute '{key}' is missing")
                out[key] = spec.default
        return out

    # -- arity ----------------------------------------------------------------
    def input_names(self, attrs: dict) -> List[str]:
        return _per_call(self.inputs, attrs)

    def output_names(self, attrs: dict) -> List[str]:
        return _per_call(self.outputs, attrs)

    def aux_names(self, attrs: dict) -> List[str]:
        return _per_call(self.aux, attrs)

    def inplace_pairs(self, attrs: dict) -> List[Tuple[int, int]]:
        """The (input, output) pairs of this call that may share storage."""
        return _per_call(self.inplace, attrs)

    def mutated_inputs(self, attrs: dict) -> List[int]:
        """Indices of the inputs this call writes in place."""
        return _per_call(self.mutates, attrs)

    def shape_only(self, attrs: dict) -> Tuple[int, ...]:
        """Positions of the inputs this call reads for their shape only."""
        return tuple(_per_call(self.shape_only_inputs, attrs))

    def visible_outputs(self, attrs: dict) -> int:
        if self.num_visible_outputs is None:
            return len(self.output_names(attrs))
        return self.num_visible_outputs(attrs)

    # -- inference ------------------------------------------------------------
    def shapes(self, attrs: dict, in_shapes: List[Optional[Shape]],
               aux_shapes: Optional[List[Optional[Shape]]] = None):
        """(in_shapes, out_shapes, aux_shapes); unknown entries are None. Raises ShapeError on conflicts."""
        naux = len(self.aux_names(attrs))
        aux_shapes = list(aux_shapes) if aux_shapes is not None else [None] * naux
        if self.infer_shape is None:
            raise OperatorError(f"{self.name}: no shape inference registered")
        res = self.infer_shape(attrs, list(in_shapes), aux_shapes) if naux else self.infer_shape(attrs, list(in_shapes))
        if len(res) == 2:
            ins, outs = res
            return list(ins), list(outs), aux_shapes
        ins, outs, auxs = res
        return list(ins), list(outs), list(auxs)

    def dtypes(self, attrs: dict, in_dtypes: List[Optional[np.dtype]]):
        """(in_dtypes, out_dtypes, aux_dtypes); default: everything takes the first known input dtype."""
        if self.infer_type is not None:
            res = self.infer_type(attrs, list(in_dtypes))
            if len(res) == 2:
                ins, outs = res
                return list(ins), list(outs), [outs[0] if outs else None] * len(self.aux_names(attrs))
            return tuple(list(x) for x in res)
        known = next((d for d in in_dtypes if d is not None), None)
        return ([known if d is None else d for d in in_dtypes],
                [known] * len(self.output_names(attrs)),
                [known] * len(self.aux_names(attrs)))

    def inputs_from_outputs(self, kind: str, attrs: dict, ins: List, outs: List) -> Optional[List]:
        """Input shapes ('shape') or dtypes ('dtype') that known outputs imply (backward inference);
        None when nothing can be said.  Without a declared dtype rule, unknown input dtypes take an
        output's dtype when the op's forward rule makes that output follow them."""
        fn = self.infer_shape_backward if kind == "shape" else self.infer_type_backward
        if fn is not None:
            return list(fn(attrs, list(ins), list(outs)))
        if kind == "dtype":
            return self._dtypes_from_outputs(attrs, list(ins), list(outs))
        return None

    def _dtypes_from_outputs(self, attrs: dict, ins: List, outs: List) -> Optional[List]:
        j = next((i for i, d in enumerate(outs) if d is not None), None)
        if j is None or all(d is not None for d in ins):
            return None
        target = np.dtype(outs[j])
        other = np.dtype(np.float64 if target != np.float64 else np.float32)
        n = len(self.input_names(attrs))
        got = []
        for cand in (target, other):  # does output j follow the unknown inputs' dtype?
            try:
                res = self.dtypes(attrs, [cand if d is None else d for d in ins[:n]])[1]
                got.append(np.dtype(res[j]) if res[j] is not None else None)
            except Exception:  # noqa: BLE001 - the candidate is not accepted by the op
                got.append(None)
        if got[0] == target and got[1] != target:
            return [target if d is None else None for d in ins]
        return None

    def stypes(self, attrs: dict, in_stypes: Sequence[str]) -> List[str]:
        """The output storage types for inputs (then aux states) of storage types `in_stypes`."""
        n = len(self.output_names(attrs))
        if self.infer_stype is None:
            return ["default"] * n
        out = list(self.infer_stype(attrs, list(in_stypes)))
        if len(out) != n:
            raise OperatorError(f"{self.name}: storage-type inference gave {len(out)} storage types for {n} outputs")
        return out

    # -- kernels --------------------------------------------------------------
    def kernel(self, device_type: str) -> Callable:
        fn = self.kernels.get(device_type) or self.kernels.get("any")
        if fn is None:
            raise OperatorError(f"{self.name}: no kernel for device '{device_type}'")
        return fn

    def cpu_ufunc(self) -> Optional[UfuncForm]:
        """`ufunc_form` while the CPU kernel is still the one it describes (None once `override` replaced it);
        for an op running another op's kernel (`kernel_of`), that op's, while this one's kernel is unchanged."""
        if (self.kernels.get("cpu") or self.kernels.get("any")) is not self._ufunc_kernel:
            return None
        if self.kernel_of is not None:
            return get(self.kernel_of).cpu_ufunc()
        return self.ufunc_form


def _kernel_of(target: OpDef) -> Callable:
    """A kernel running `target`'s current kernel (see `OpDef.kernel_of`)."""
    kernels = target.kernels  # the dict override() edits, so lookups see replacements

    def kernel(ctx, attrs, inputs, outputs, aux):
        (kernels.get("cpu" if ctx.xp is np else "gpu") or kernels["any"])(ctx, attrs, inputs, outputs, aux)
    kernel.__doc__ = f"Runs {target.name}'s kernel (looked up at each call)."
    return kernel


_OPS: Dict[str, OpDef] = {}
_ALIASES: Dict[str, str] = {}


def register(op: OpDef) -> OpDef:
    """Add an operator (and its aliases) to the registry; names must be new."""
    for name in (op.name, *op.aliases):
        if name in _ALIASES:
            raise OperatorError(f"operator name '{name}' is already registered (by {_ALIASES[name]})")
    _OPS[op.name] = op
    for name in (op.name, *op.aliases):
        _ALIASES[name] = op.name
    _changed()
    return op


def get(name: str) -> OpDef:
    """The OpDef registered under `name` or one of its aliases."""
    try:
        return _OPS[_ALIASES[name]]
    except KeyError:
        raise OperatorError(f"unknown operator '{name}'") from None


def exists(name: str) -> bool:
    return name in _ALIASES


def list_ops(include_aliases: bool = False) -> List[str]:
    """Sorted operator names (with aliases if asked)."""
    return sorted(_ALIASES if include_aliases else _OPS)


def override(name: str, device: str, fn: Callable) -> Callable:
    """Replace the kernel of `name` on `device` ('cpu', 'gpu' or 'any') everywhere; returns the old one."""
    op = get(name)
    old = op.kernels.get(device) or op.kernels.get("any")
    op.kernels[device] = fn
    _changed()
    return old


# -- change listeners (for callers that cache what kernels do) ---------------------------------
_LISTENERS: List[Callable[[], None]] = []


def on_change(fn: Callable[[], None]) -> None:
    """Call fn() whenever an operator is registered or a kernel overridden (caches drop stale entries)."""
    _LISTENERS.append(fn)


def _changed() -> None:
    for fn in _LISTENERS:
        fn()
