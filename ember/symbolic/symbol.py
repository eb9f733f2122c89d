"""`Symbol`: a handle on some outputs of a graph, with MXNet 1.x's Symbol API."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from .. import ops as _ops
from ..base import ArgumentError, EmberError, NotImplementedForSymbol, OperatorError, brief_names
from ..util import is_np_shape
from .graph import Entry, Node, aux_variable_ids, topo_order
from .infer import infer_dtypes, infer_shapes, is_complete_shape
from .naming import AttrScope, NameManager


# MXNet's numeric dtype codes, used in a variable's '__dtype__' attribute.
DTYPE_TO_CODE = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2,
                 np.dtype(np.uint8): 3, np.dtype(np.int32): 4, np.dtype(np.int8): 5,
                 np.dtype(np.int64): 6, np.dtype(np.bool_): 7}
CODE_TO_DTYPE = {v: k for k, v in DTYPE_TO_CODE.items()}


class Symbol:
    """Some output entries of a graph; operators on symbols build new nodes, never copy old ones."""

    __slots__ = ("_outputs", "__weakref__")

    def __init__(self, outputs: Sequence[Entry]):
        self._outputs: List[Entry] = list(outputs)

    # -- structure -------------------------------------------------------------
    def _nodes(self) -> List[Node]:
        return topo_order(self._outputs)

    @property
    def name(self) -> Optional[str]:
        """The node name when this symbol is a single output, else None."""
        if len(self._outputs) != 1:
            return None
        return self._outputs[0][0].name

    def __len__(self) -> int:
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([e]) for e in self._outputs)

    def __getitem__(self, index: Union[int, str, slice]) -> "Symbol":
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if not matches:
                raise ValueError(f"cannot find output named '{index}' (outputs: {names})")
            if len(matches) > 1:
                raise ValueError(f"output name '{index}' is ambiguous")
            index = matches[0]
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"symbol index must be int, str or slice, not {type(index).__name__}")
        n = len(self._outputs)
        if not -n <= index < n:
            raise IndexError(f"symbol output index {index} out of range for {n} outputs")
        return Symbol([self._outputs[int(index)]])

    def as_nd_ndarray(self) -> "Symbol":
        """This symbol itself: a legacy symbol already is what np code converts to (MXNet's Symbol has
        the method so that the same hybrid_forward traces with either kind of input)."""
        return self

    def as_np_ndarray(self) -> "Symbol":
        """The same outputs as an np symbol (`mx.sym.np._Symbol`); nothing is copied."""
        from .np_symbol import as_np
        return as_np(self)

    def list_outputs(self) -> List[str]:
        """Names of the outputs: '<node>_<output>' for operators, the name for variables."""
        return [node.output_name(i) for node, i in self._outputs]

    def list_arguments(self) -> List[str]:
        """Variables that are not auxiliary states, in graph order."""
        order = self._nodes()
        aux = aux_variable_ids(order)
        return [n.name for n in order if n.op is None and id(n) not in aux]

    def list_auxiliary_states(self) -> List[str]:
        """Variables used as auxiliary states (updated in place by their operator)."""
        order = self._nodes()
        aux = aux_variable_ids(order)
        return [n.name for n in order if n.op is None and id(n) in aux]

    def list_inputs(self) -> List[str]:
        """Every variable, arguments and auxiliary states, in graph order."""
        return [n.name for n in self._nodes() if n.op is None]

    def get_internals(self) -> "Symbol":
        """A group of every (visible) output of every node of the graph."""
        return Symbol([(n, i) for n in self._nodes() for i in range(n.num_visible_outputs())])

    def get_children(self) -> Optional["Symbol"]:
        """The inputs of this symbol's node(s), or None for a variable."""
        entries, seen = [], set()
        for node, _ in self._outputs:
            if id(node) not in seen:  # a multi-output node's inputs once, as MXNet
                seen.add(id(node))
                entries.extend(node.inputs)
        return Symbol(entries) if entries else None

    # -- attributes ------------------------------------------------------------
    def attr(self, key: str) -> Optional[str]:
        """The string attribute `key` of this single-node symbol (user attributes and op parameters)."""
        if len(self._outputs) != 1:
            raise EmberError("attr() needs a symbol with a single output")
        return _node_attr_strings(self._outputs[0][0]).get(key)

    def list_attr(self, recursive: bool = False) -> Dict[str, str]:
        if recursive:
            raise EmberError("list_attr(recursive=True) is gone in MXNet 1.x; use attr_dict()")
        if len(self._outputs) != 1:
            raise EmberError("list_attr() needs a symbol with a single output")
        return _node_attr_strings(self._outputs[0][0])

    def attr_dict(self) -> Dict[str, Dict[str, str]]:
        """{node name: {attribute: string}} for every node that has attributes."""
        return {n.name: d for n in self._nodes() if (d := _node_attr_strings(n))}

    def _set_attr(self, **kwargs) -> None:
        for node, _ in self._outputs:
            for k, v in kwargs.items():
                if not isinstance(v, str):
                    raise TypeError(f"attribute '{k}' must be a string")
                node.user_attrs.update(hide_keys({k: v}))

    # -- inference -------------------------------------------------------------
    def _known(self, args, kwargs, kind: str, np_shape: bool = False):
        order = self._nodes()
        aux = aux_variable_ids(order)
        arg_nodes = [n for n in order if n.op is None and id(n) not in aux]
        known = {}
        for n in order:
            if n.op is None:
                if kind == "shape" and "__shape__" in n.user_attrs:
                    known[(id(n), 0)] = _parse_shape_attr(n.user_attrs["__shape__"], n.name)
                if kind == "dtype" and "__dtype__" in n.user_attrs:
                    known[(id(n), 0)] = _parse_dtype_attr(n.user_attrs["__dtype__"], n.name)
        what = "infer_shape" if kind == "shape" else "infer_type"
        if args and kwargs:
            raise ArgumentError(f"{what}: give arguments either by position or by name, not both")
        by_name = {}
        if args:
            if len(args) > len(arg_nodes):
                raise ArgumentError(f"{what}: {len(args)} positional values for {len(arg_nodes)} arguments "
                                    f"{brief_names(n.name for n in arg_nodes)}")
            for n, v in zip(arg_nodes, args):
                if v is not None:
                    by_name[n.name] = v
        else:
            by_name = {k: v for k, v in kwargs.items() if v is not None}
        names = {n.name: n for n in order if n.op is None}
        for k, v in by_name.items():
            if k not in names:
                raise ArgumentError(f"{what}: '{k}' is not an input of this symbol (inputs: {brief_names(names)})")
            if kind == "shape":
                if isinstance(v, (int, np.integer)):
                    v = (int(v),)
                # unknown dimensions: 0 in MXNet 1.x (infer_shapes reads them), -1 under NumPy shape semantics
                known[(id(names[k]), 0)] = tuple(None if d is None or (np_shape and d == -1) else int(d)
                                                 for d in v)
            else:
                known[(id(names[k]), 0)] = _ops.as_dtype(v)
        return order, aux, known

    def _infer(self, args, kwargs, kind: str, partial: bool):
        np_shape = is_np_shape()
        order, aux, known = self._known(args, kwargs, kind, np_shape)
        if kind == "shape":
            vals = infer_shapes(order, known, zero_is_unknown=not np_shape)
        else:
            vals = infer_dtypes(order, known)
        arg_nodes = [n for n in order if n.op is None and id(n) not in aux]
        aux_nodes = [n for n in order if n.op is None and id(n) in aux]
        argv = [vals.get((id(n), 0)) for n in arg_nodes]
        outv = [vals.get((id(n), i)) for n, i in self._outputs]
        auxv = [vals.get((id(n), 0)) for n in aux_nodes]
        ok = (is_complete_shape if kind == "shape" else (lambda v: v is not None))
        if not partial and not all(ok(v) for v in argv + outv + auxv):
            return None, None, None
        if kind == "shape" and np_shape:  # NumPy shape semantics: -1 for unknown dims, None for unknown shapes
            fix = (lambda v: tuple(-1 if d is None else d for d in v) if v is not None else None)
        elif kind == "shape":
            fix = (lambda v: tuple(0 if d is None else d for d in v) if v is not None else ())
        else:
            fix = (lambda v: np.dtype(v).type if v is not None else None)
        return [fix(v) for v in argv], [fix(v) for v in outv], [fix(v) for v in auxv]

    def infer_shape(self, *args, **kwargs):
        """(arg_shapes, out_shapes, aux_shapes) from the given input shapes; Nones if not all inferable."""
        return self._infer(args, kwargs, "shape", partial=False)

    def infer_shape_partial(self, *args, **kwargs):
        """Like infer_shape, with () for unknown shapes instead of giving up."""
        return self._infer(args, kwargs, "shape", partial=True)

    def infer_type(self, *args, **kwargs):
        """(arg_types, out_types, aux_types) as numpy types; Nones if not all inferable."""
        return self._infer(args, kwargs, "dtype", partial=False)

    def infer_type_partial(self, *args, **kwargs):
        return self._infer(args, kwargs, "dtype", partial=True)

    # -- serialization ---------------------------------------------------------
    def tojson(self) -> str:
        """The graph in MXNet's symbol JSON format."""
        from .json_io import to_json
        return to_json(self)

    def save(self, fname: str, remove_amp_cast: bool = True) -> None:
        """Write tojson() to `fname`."""
        with open(fname, "w") as f:
            f.write(self.tojson())

    def debug_str(self) -> str:
        lines = []
        for n in self._nodes():
            kind = n.op.name if n.op else "Variable"
            ins = ", ".join(c.output_name(i) for c, i in n.inputs)
            lines.append(f"{kind}:{n.name}({ins})")
        return "\n".join(lines)

    def __repr__(self):
        if len(self._outputs) == 1:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(self.list_outputs())}]>"

    def __copy__(self):
        return self._deep_copy()

    def __deepcopy__(self, memo):
        return self._deep_copy()

    def _deep_copy(self, replace: Optional[Dict[str, Entry]] = None) -> "Symbol":
        """A copy of the graph with fresh nodes; variables named in `replace` become those entries."""
        mapping: Dict[int, Node] = {}
        repl_entries: Dict[int, Entry] = {}
        for n in self._nodes():
            if n.op is None and replace and n.name in replace:
                repl_entries[id(n)] = replace[n.name]
                continue
            new = Node(n.op, n.name, n.attrs, None, n.user_attrs)
            new.inputs = [repl_entries[id(c)] if id(c) in repl_entries else (mapping[id(c)], i) for c, i in n.inputs]
            mapping[id(n)] = new
        return Symbol([repl_entries[id(n)] if id(n) in repl_entries else (mapping[id(n)], i) for n, i in self._outputs])

    def _gen_atomic_symbol(self) -> "Symbol":
        """The operator of this symbol's (first) node with its attributes and no inputs (MXNet's
        atomic symbol, as AMP uses it): calling it with inputs makes a new node of that operator."""
        node = self._outputs[0][0]
        if node.op is None:
            raise OperatorError(f"_gen_atomic_symbol: '{node.name}' is a variable, not an operator")
        atom = Node(node.op, "", node.attrs, [], node.user_attrs)
        atom._parsed, atom._arity = node._parsed, node._arity
        return Symbol([(atom, i) for i in range(atom.num_visible_outputs())])

    def _is_atomic(self) -> bool:
        node = self._outputs[0][0]
        return node.op is not None and not node.inputs and node.num_inputs() > 0

    def __call__(self, *args, **kwargs) -> "Symbol":
        """Compose: replace this graph's variables with other symbols (by name, or positionally by argument)."""
        if self._outputs and self._is_atomic():  # an atomic symbol: apply its operator to the inputs
            node = self._outputs[0][0]
            name = kwargs.pop("name", None)
            return create(node.op, args, {**node.attrs, **kwargs}, name=name,
                          attr={k: v for k, v in node.user_attrs.items()} or None)
        name = kwargs.pop("name", None)
        replace: Dict[str, Entry] = {}
        arg_names = self.list_arguments()
        if len(args) > len(arg_names):
            raise ValueError(f"compose: {len(args)} positional symbols for {len(arg_names)} arguments")
        for n, s in zip(arg_names, args):
            replace[n] = _single_entry(s, n)
        inputs = set(self.list_inputs())
        for k, s in kwargs.items():
            if k not in inputs:
                raise ValueError(f"compose: '{k}' is not an input of this symbol")
            replace[k] = _single_entry(s, k)
        out = self._deep_copy(replace)
        if name is not None and len(out._outputs) == 1:
            out._outputs[0][0].name = name
        return out

    def __getstate__(self):
        return {"handle": self.tojson()}

    def __setstate__(self, state):
        from .json_io import from_json
        self._outputs = from_json(state["handle"])._outputs

    # -- binding ---------------------------------------------------------------
    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
        """Allocate arguments, gradients and aux states from shapes and bind (see Executor)."""
        from .executor import simple_bind
        return simple_bind(self, ctx, grad_req=grad_req, type_dict=type_dict, shared_exec=shared_exec,
                           shared_arg_names=shared_arg_names, shared_buffer=shared_buffer, group2ctx=group2ctx,
                           stype_dict=stype_dict, **kwargs)

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
             shared_exec=None):
        """An Executor over caller-given argument / gradient / aux arrays."""
        from .executor import Executor
        pool = shared_exec._storage.pool if shared_exec is not None else None
        return Executor(self, ctx, args, args_grad, grad_req, aux_states, group2ctx=group2ctx, shared_pool=pool)

    def eval(self, ctx=None, **kwargs):
        """Bind to the given arrays and run forward once; returns the outputs."""
        from ..context import current_context
        exe = self.bind(ctx or current_context(), kwargs, grad_req="null")
        return exe.forward(is_train=False)

    def astype(self, dtype) -> "Symbol":
        """A `Cast` of this symbol to `dtype`."""
        return make_op_function("Cast")(self, dtype=dtype)

    # -- operator methods (sym.reshape(...), sym.sum(...)) ----------------------
    def __getattr__(self, name: str):
        if name.startswith("__") or not _ops.exists(name):
            raise AttributeError(f"'Symbol' object has no attribute '{name}'")
        fn = make_op_function(name)

        def method(*args, **kwargs):
            return fn(self, *args, **kwargs)
        method.__name__ = name
        method.__doc__ = fn.__doc__
        return method

    # -- arithmetic (MXNet 1.9 op names, so JSON matches) ------------------------
    def _bin(self, other, op, hint, scalar_op, scalar_hint):
        if isinstance(other, Symbol):
            return _apply(op, [self, other], {}, hint=hint)
        if isinstance(other, (int, float, np.integer, np.floating, bool)):
            return _apply(scalar_op, [self], {"scalar": other}, hint=scalar_hint)
        return NotImplemented

    def _rscalar(self, other, scalar_op, scalar_hint):
        if isinstance(other, (int, float, np.integer, np.floating, bool)):
            return _apply(scalar_op, [self], {"scalar": other}, hint=scalar_hint)
        return NotImplemented

    def __add__(self, o): return self._bin(o, "elemwise_add", "_plus", "_plus_scalar", "_plusscalar")
    def __radd__(self, o): return self._rscalar(o, "_plus_scalar", "_plusscalar")
    def __sub__(self, o): return self._bin(o, "elemwise_sub", "_minus", "_minus_scalar", "_minusscalar")
    def __rsub__(self, o): return self._rscalar(o, "_rminus_scalar", "_rminusscalar")
    def __mul__(self, o): return self._bin(o, "elemwise_mul", "_mul", "_mul_scalar", "_mulscalar")
    def __rmul__(self, o): return self._rscalar(o, "_mul_scalar", "_mulscalar")
    def __truediv__(self, o): return self._bin(o, "elemwise_div", "_div", "_div_scalar", "_divscalar")
    def __rtruediv__(self, o): return self._rscalar(o, "_rdiv_scalar", "_rdivscalar")
    def __mod__(self, o): return self._bin(o, "_mod", "_mod", "_mod_scalar", "_modscalar")
    def __rmod__(self, o): return self._rscalar(o, "_rmod_scalar", "_rmodscalar")
    def __pow__(self, o): return self._bin(o, "_power", "_power", "_power_scalar", "_powerscalar")
    def __rpow__(self, o): return self._rscalar(o, "_rpower_scalar", "_rpowerscalar")
    def __neg__(self): return _apply("_mul_scalar", [self], {"scalar": -1.0}, hint="_mulscalar")
    def __abs__(self): return _apply("abs", [self], {})
    def __eq__(self, o): return self._bin(o, "_equal", "_equal", "_equal_scalar", "_equalscalar")
    def __ne__(self, o): return self._bin(o, "_not_equal", "_notequal", "_not_equal_scalar", "_notequalscalar")
    def __gt__(self, o): return self._bin(o, "_greater", "_greater", "_greater_scalar", "_greaterscalar")
    def __ge__(self, o): return self._bin(o, "_greater_equal", "_greaterequal", "_greater_equal_scalar", "_greaterequalscalar")
    def __lt__(self, o): return self._bin(o, "_lesser", "_lesser", "_lesser_scalar", "_lesserscalar")
    def __le__(self, o): return self._bin(o, "_lesser_equal", "_lesserequal", "_lesser_equal_scalar", "_lesserequalscalar")
    __div__ = __truediv__
    __hash__ = object.__hash__

    def __bool__(self):
        raise NotImplementedForSymbol(self.__bool__, "bool")


# ---------------------------------------------------------------------------
def _single_entry(s, what: str, slot: str = "") -> Entry:
    """The one output entry of symbol `s` (passed as input `slot` of `what`)."""
    if type(s) is Symbol and len(s._outputs) == 1:
        return s._outputs[0]  # the common case, without building the error text
    if slot:
        what = f"{what}.{slot}"
    if not isinstance(s, Symbol):
        raise TypeError(f"'{what}' must be a Symbol, got {type(s).__name__}")
    if len(s._outputs) != 1:
        raise OperatorError(f"'{what}': a symbol with {len(s._outputs)} outputs cannot be an input; index one output")
    return s._outputs[0]


def _parse_shape_attr(text: str, name: str) -> tuple:
    import ast
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError(f"variable '{name}': malformed __shape__ attribute {text!r}") from None
    if isinstance(v, int):
        v = (v,)
    return tuple(None if d in (0, -1) else int(d) for d in v)


def _parse_dtype_attr(text: str, name: str) -> np.dtype:
    t = text.strip()
    if t.lstrip("-").isdigit():
        code = int(t)
        if code not in CODE_TO_DTYPE:
            raise ValueError(f"variable '{name}': unknown dtype code {code} in __dtype__")
        return CODE_TO_DTYPE[code]
    return _ops.as_dtype(t)


def format_attr_value(op: Optional[_ops.OpDef], key: str, value: Any) -> str:
    """The string MXNet stores for an attribute value (str() of the Python value, dtype names)."""
    if isinstance(value, str):
        return value
    spec = op.attrs.get(key) if op is not None else None
    if spec is not None and spec.kind == "dtype":
        return spec.format(_ops.as_dtype(value))
    if isinstance(value, (np.integer,)):
        return str(int(value))
    if isinstance(value, (np.floating,)):
        return str(float(value))
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, list):
        value = tuple(value)
    return str(value)


# NNVM's hidden keys: stored as '__key__', listed under both spellings (MXNet's attr_dict does this).
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage", "profiler_scope")


def hide_keys(attrs: Dict[str, str]) -> Dict[str, str]:
    """Store NNVM's hidden keys ('ctx_group', 'lr_mult', ...) as '__key__', as MXNet does."""
    return {(f"__{k}__" if k in HIDDEN_KEYS else k): v for k, v in attrs.items()}


def _node_attr_strings(node: Node) -> Dict[str, str]:
    d = {k: format_attr_value(node.op, k, v) for k, v in node.attrs.items()}
    d.update(node.user_attrs)
    for k in HIDDEN_KEYS:
        if f"__{k}__" in node.user_attrs:
            d[k] = node.user_attrs[f"__{k}__"]
    return d


def _apply(op_name: str, inputs: List[Symbol], attrs: dict, hint: Optional[str] = None,
           name: Optional[str] = None) -> Symbol:
    fn = make_op_function(op_name)
    return fn(*inputs, name=name, _hint=hint, **attrs)


_FUNC_CACHE: Dict[tuple, Any] = {}


def make_op_function(op_name: str, hint: Optional[str] = None):
    """The `mx.sym.<op_name>` function for a registry operator (made once, on first use).

    Unnamed nodes are named after the name the operator was called by, as MXNet names them
    (`mx.sym.flip` makes `flip0` although its operator is `reverse`); `hint` overrides that
    name (`mx.sym.contrib.box_nms` makes `box_nms0`)."""
    hint = (hint or op_name).lower()
    fn = _FUNC_CACHE.get((op_name, hint))
    if fn is not None:
        return fn
    opdef = _ops.get(op_name)  # raises OperatorError for unknown ops

    def op_function(*args, name: Optional[str] = None, attr: Optional[dict] = None, _hint=None, **kwargs):
        return create(opdef, args, kwargs, name=name, attr=attr, hint=_hint or hint)
    op_function.__name__ = op_name
    op_function.__qualname__ = op_name
    op_function.__doc__ = opdef.doc or f"Symbolic `{opdef.name}` operator (see ember.ops.get('{opdef.name}'))."
    _FUNC_CACHE[(op_name, hint)] = op_function
    return op_function


def _split_positional(opdef: _ops.OpDef, args: Sequence, op_attrs: dict) -> List[Any]:
    """MXNet's generated signature: leading Symbols (or None for an input left out) are inputs,
    further positional values are attributes in declaration order; returns the inputs."""
    args = list(args)
    for i, a in enumerate(args):  # variadic ops also take their inputs as one list: Concat([a, b])
        if isinstance(a, (list, tuple)) and a and all(isinstance(x, Symbol) for x in a):
            args = args[:i] + list(a) + args[i + 1:]
            break
    n = 0
    while n < len(args) and (isinstance(args[n], Symbol) or (args[n] is None and not opdef.key_var_num_args)):
        n += 1
    inputs, rest = args[:n], args[n:]
    if rest:
        free = [k for k in opdef.attrs if k not in op_attrs and k != opdef.key_var_num_args]
        if len(rest) > len(free):
            bad = rest[len(free)]
            raise TypeError(f"{opdef.name}: positional argument {n + len(free)} must be a Symbol, got "
                            f"{type(bad).__name__} {bad!r} (every attribute is taken: {list(opdef.attrs)})")
        for key, value in zip(free, rest):
            if isinstance(value, Symbol):
                raise TypeError(f"{opdef.name}: positional argument for attribute '{key}' is a Symbol; "
                                "inputs come before attributes")
            if value is not None:
                op_attrs[key] = value
    return inputs


def create(opdef: _ops.OpDef, args: Sequence, kwargs: dict, name: Optional[str] = None,
           attr: Optional[dict] = None, hint: Optional[str] = None) -> Symbol:
    """Build one operator node from positional/keyword symbols and attributes (MXNet's calling convention)."""
    kwargs.pop("out", None)
    if kwargs:
        sym_kwargs = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
        # None leaves an input or attribute out, except for attributes where None is a value
        # (sort(axis=None) sorts the flattened array, as in MXNet, not along the default axis -1)
        op_attrs = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol) and
                    (v is not None or (k in opdef.attrs and opdef.attrs[k].kind.endswith("_or_none")))}
    else:  # the gradient pass makes thousands of attribute-less nodes
        sym_kwargs, op_attrs = {}, {}
    if args and not all(type(a) is Symbol for a in args):
        args = _split_positional(opdef, args, op_attrs)
    # NNVM's hidden keys given as keywords (lr_mult=2, ctx_group='dev1') are node attributes, not op parameters
    hidden = {k: op_attrs.pop(k) for k in HIDDEN_KEYS if k in op_attrs and k not in opdef.attrs}
    if opdef.key_var_num_args and opdef.key_var_num_args not in op_attrs and opdef.key_var_num_args in opdef.attrs:
        op_attrs[opdef.key_var_num_args] = len(args) + len(sym_kwargs)
    op_only = {k: v for k, v in op_attrs.items() if not (k.startswith("__") and k.endswith("__"))}
    try:
        parsed = opdef.parse_attrs(op_only)
    except OperatorError as e:
        raise type(e)(f"{e}" + (f" (node '{name}')" if name else "")) from None
    manager = NameManager.current
    node_name = manager.get(name, hint or opdef.name.lower())
    input_names = opdef.input_names(parsed)
    aux_names = opdef.aux_names(parsed)
    all_names = input_names + aux_names
    if len(args) > len(all_names) and any(a is not None for a in args[len(all_names):]):
        raise OperatorError(f"{opdef.name} '{node_name}': {len(args)} positional inputs given, "
                            f"it takes {len(input_names)} ({', '.join(input_names)})")
    slots: Dict[str, Entry] = {}
    for n, a in zip(all_names, args):
        if a is not None:
            slots[n] = _single_entry(a, opdef.name, n)
    for k, v in sym_kwargs.items():
        if k not in all_names:
            raise OperatorError(f"{opdef.name} '{node_name}': unknown input '{k}' (inputs: {all_names})")
        if k in slots:
            raise OperatorError(f"{opdef.name} '{node_name}': input '{k}' given twice")
        slots[k] = _single_entry(v, opdef.name, k)
    scope_attrs = AttrScope.current.get(attr)
    user_attrs = hide_keys({k: (v if isinstance(v, str) else str(v)) for k, v in scope_attrs.items()}) \
        if scope_attrs else {}
    if hidden:
        user_attrs.update(hide_keys({k: (v if isinstance(v, str) else str(v)) for k, v in hidden.items()}))
    for k, v in op_attrs.items():
        if k.startswith("__") and k.endswith("__"):
            user_attrs[k] = v if isinstance(v, str) else str(v)
    entries = []
    for n in all_names:
        if n not in slots:
            # MXNet names missing inputs '<node>_<input>' and gives them the node's attributes
            # (parameters and user attributes: lr_mult on a layer reaches its weight and bias).
            var_attrs = {k: format_attr_value(opdef, k, v) for k, v in op_only.items()}
            var_attrs.update(user_attrs)
            slots[n] = (Node(None, f"{node_name}_{n}", user_attrs=var_attrs), 0)
        entries.append(slots[n])
        if n in opdef.input_var_attrs and slots[n][0].op is None:  # given or made, as MXNet's compose
            for k, v in opdef.input_var_attrs[n].items():
                slots[n][0].user_attrs.setdefault(k, v)
    node = Node(opdef, node_name, op_only, entries, user_attrs)
    node._parsed = parsed
    nvis = opdef.visible_outputs(parsed)
    node._arity = (len(input_names), len(aux_names), len(opdef.output_names(parsed)), nvis)
    return Symbol([(node, i) for i in range(nvis)])


def var(name: str, attr: Optional[dict] = None, shape=None, lr_mult=None, wd_mult=None, dtype=None,
        init=None, stype=None, **kwargs) -> Symbol:
    """A variable (graph input) with optional shape, dtype, init, lr/wd multipliers and '__x__' attributes."""
    if not isinstance(name, str):
        raise TypeError(f"variable name must be a string, got {type(name).__name__}")
    attrs = AttrScope.current.get(attr)
    attrs = hide_keys({k: (v if isinstance(v, str) else str(v)) for k, v in attrs.items()})
    if shape is not None:
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        attrs["__shape__"] = str(tuple(int(d) for d in shape))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        dt = _ops.as_dtype(dtype)
        if dt not in DTYPE_TO_CODE:
            raise TypeError(f"variable '{name}': unsupported dtype {dt}")
        attrs["__dtype__"] = str(DTYPE_TO_CODE[dt])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        attrs["__storage_type__"] = str({"default": 0, "row_sparse": 1, "csr": 2}.get(stype, stype))
    for k, v in kwargs.items():
        if not (k.startswith("__") and k.endswith("__")):
            raise ValueError(f"variable '{name}': attribute name '{k}' is not supported; "
                             "additional attributes must start and end with double underscores, e.g. __yourattr__")
        attrs[k] = v if isinstance(v, str) else str(v)
    return Symbol([(Node(None, name, user_attrs=attrs), 0)])


Variable = var


def Group(symbols: Sequence[Symbol]) -> Symbol:
    """One symbol whose outputs are the outputs of `symbols`, in order."""
    if not symbols:
        raise ValueError("Group needs at least one symbol")
    entries = []
    for s in symbols:
        if not isinstance(s, Symbol):
            raise TypeError(f"Group expects Symbols, got {type(s).__name__}")
        entries.extend(s._outputs)
    return Symbol(entries)
