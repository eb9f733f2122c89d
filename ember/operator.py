"""`mx.operator`: operator introspection (and, in its own section, custom operators in Python)."""
from __future__ import annotations

import ctypes  # noqa: F401 - MXNet's module has it: `from mxnet.operator import *` code casts handles
from collections import namedtuple
from typing import List

from . import ops as _ops
from .base import NDArrayHandle, OperatorError  # noqa: F401 - (NDArrayHandle: as ctypes above)
from .imperative.ndarray import NDArray  # noqa: F401 - MXNet's module exports it too

# -- introspection of the registry (MXNet's get_all_registered_operators / get_operator_arguments) --

OperatorArguments = namedtuple("OperatorArguments", ["narg", "names", "types"])

_KIND_NAMES = {"int": "int", "float": "float", "bool": "boolean", "str": "string", "shape": "Shape(tuple)",
               "dtype": "dtype", "any": "any"}


def get_all_registered_operators() -> List[str]:
    """Names of every registered operator, aliases included (MXNet lists those too)."""
    return _ops.list_ops(include_aliases=True)


def _attr_type(spec) -> str:
    """An attribute's type in MXNet's words: 'int, required', 'float, optional, default=0.5'."""
    kind = spec.kind
    optional_none = kind.endswith("_or_none")
    base = kind[: -len("_or_none")] if optional_none else kind
    if spec.choices:
        text = "{" + ", ".join(repr(c) for c in sorted(spec.choices)) + "}"  # MXNet lists them sorted
    else:
        text = _KIND_NAMES.get(base, base) + (" or None" if optional_none else "")
    if spec.default is _ops.registry.REQUIRED:
        return f"{text}, required"
    return f"{text}, optional, default={spec.format(spec.default)}"


def _input_names(opdef) -> List[str]:
    # Inputs may depend on attributes (no_bias, num_args): use the defaults, as MXNet's docs do.
    attrs = {k: (None if v.default is _ops.registry.REQUIRED else v.default) for k, v in opdef.attrs.items()}
    try:
        return opdef.input_names(attrs) + opdef.aux_names(attrs)
    except Exception:  # an input list that needs a required attribute: name the first input only
        return ["data"]


def get_operator_arguments(op_name: str) -> OperatorArguments:
    """(narg, names, types) of an operator: its inputs ('NDArray-or-Symbol', '[]' for variadic
    inputs) then its attributes, as MXNet's get_operator_arguments returns them."""
    if not isinstance(op_name, str):
        raise TypeError(f"get_operator_arguments: op_name must be a string, got {type(op_name).__name__}")
    if not _ops.exists(op_name):
        raise OperatorError(f"Operator {op_name} is not registered")
    opdef = _ops.get(op_name)
    variadic = bool(opdef.key_var_num_args)
    inputs = ["data"] if variadic else _input_names(opdef)
    names = inputs + list(opdef.attrs)
    types = ["NDArray-or-Symbol[]" if variadic else "NDArray-or-Symbol"] * len(inputs) + \
        [_attr_type(spec) for spec in opdef.attrs.values()]
    return OperatorArguments(len(names), names, types)


# -- custom operators in Python (MXNet's CustomOp / CustomOpProp / register) ------------------
# The mechanism is the registry op `Custom` (ember/ops/custom.py); this section is MXNet's API.

def _assign(dst, req: str, src) -> None:
    if req == "null":
        return
    if req in ("write", "inplace"):
        dst[:] = src
    elif req == "add":
        dst[:] += src
    else:
        raise ValueError(f"assign: req must be 'null', 'write', 'inplace' or 'add', got {req!r}")


class CustomOp:
    """Base class of an operator's computation in Python: override `forward` and `backward`.

    Both receive NDArrays and write their results into `out_data` / `in_grad`, honouring `req`
    ('write', 'inplace', 'add' or 'null'); `self.assign(dst, req, src)` does exactly that.
    """

    def __init__(self):
        pass

    def forward(self, is_train: bool, req: List[str], in_data, out_data, aux) -> None:
        """Compute out_data from in_data (and aux states, which it may update)."""

    def backward(self, req: List[str], out_grad, in_data, out_data, in_grad, aux) -> None:
        """Compute in_grad from out_grad (and whatever declare_backward_dependency kept)."""

    def assign(self, dst, req: str, src) -> None:
        """Write `src` into `dst` as `req` says: 'write'/'inplace' copy, 'add' accumulates, 'null' skips."""
        _assign(dst, req, src)


class CustomOpProp:
    """Base class of an operator's properties: names, shape/dtype inference, backward
    dependencies, and `create_operator` (the CustomOp doing the work).

    Register a subclass with `@mx.operator.register(name)`; `Custom(..., op_type=name, **kwargs)`
    then builds it with `kwargs` (as strings).  need_top_grad: whether backward reads the
    output gradients (the default declare_backward_dependency keeps them only then).
    """

    def __init__(self, need_top_grad: bool = True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """(input shapes, output shapes[, aux shapes]); default: every output like input 0."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """(input dtypes, output dtypes[, aux dtypes]); default: everything like input 0."""
        return in_type, [in_type[0]] * len(self.list_outputs()), [in_type[0]] * len(self.list_auxiliary_states())

    def infer_storage_type(self, in_stype):
        """Storage types: ember arrays are dense ('default') only."""
        for i, stype in enumerate(in_stype):
            if stype != "default":
                raise ValueError(f"infer_storage_type: input {i} has storage type '{stype}'; only 'default' "
                                 "(dense) arrays are supported")
        return in_stype, ["default"] * len(self.list_outputs()), ["default"] * len(self.list_auxiliary_states())

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype, aux_stype):
        """Storage types of backward: all dense."""
        lists = [ograd_stype, in_stype, out_stype, igrad_stype, aux_stype]
        return tuple(["default"] * len(x) for x in lists)

    def list_outputs(self) -> List[str]:
        """Output names (default ['output'])."""
        return ["output"]

    def list_arguments(self) -> List[str]:
        """Input names (default ['data'])."""
        return ["data"]

    def list_auxiliary_states(self) -> List[str]:
        """Auxiliary state names (default none)."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data) -> List[int]:
        """Ids of what backward reads: out_grad (if need_top_grad), in_data and out_data."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx, in_shapes, in_dtypes) -> CustomOp:
        """The CustomOp for these input shapes and dtypes (MXNet dtype codes) on `ctx`."""
        return CustomOp()


def register(reg_name: str):
    """Class decorator: register a CustomOpProp subclass as custom operator `reg_name`."""
    from .ops import custom as _custom

    def do_register(prop_cls):
        _custom.register_prop(reg_name, prop_cls)
        return prop_cls
    return do_register


register("custom_op")(CustomOpProp)


# -- MXNet's legacy Python operators (PythonOp / NumpyOp), carried by the same Custom op ----------

class PythonOp:
    """Base of MXNet's legacy Python operators: override forward/backward (and the shape and name
    methods); `op.get_symbol(*inputs, name=...)` (or `op(*inputs)`) makes the symbol."""

    def __init__(self, need_top_grad: bool = True):
        self.info_ = None
        self.need_top_grad_ = need_top_grad

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """The symbol running this operator on the given input symbols."""
        raise NotImplementedError("Must override this")

    def forward(self, in_data, out_data) -> None:
        """Write the outputs into out_data (default: a copy of input 0)."""
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad) -> None:
        """Write the input gradients into in_grad (MXNet's default: ones)."""
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        """(input shapes, output shapes); default: one output shaped like input 0."""
        return in_shape, [in_shape[0]]

    def list_outputs(self) -> List[str]:
        """Output names (default ['output'])."""
        return ["output"]

    def list_arguments(self) -> List[str]:
        """Input names (default ['data'])."""
        return ["data"]

    def need_top_grad(self) -> bool:
        """Whether backward reads the output gradients."""
        return self.need_top_grad_


class NumpyOp(PythonOp):
    """A PythonOp whose forward/backward receive numpy arrays (outputs and gradients written in place)."""

    def get_symbol(self, *args, **kwargs):
        from .symbol import Custom
        op_type = f"_numpy_op_{id(self):x}"
        _register_python_op(op_type, self)
        return Custom(*args, op_type=op_type, **kwargs)


def _register_python_op(op_type: str, pyop: PythonOp) -> None:
    """Register (once) a CustomOpProp that runs `pyop` on numpy copies of the arrays."""
    import numpy as np
    from .ops import custom as _custom
    from .imperative.creation import array

    class _Op(CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            host_in = [x.asnumpy() for x in in_data]
            host_out = [np.zeros(o.shape, dtype=o.dtype) for o in out_data]
            pyop.forward(host_in, host_out)
            for dst, src, r in zip(out_data, host_out, req):
                _assign(dst, r, array(src, ctx=dst.context, dtype=dst.dtype))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            host_grad = [np.zeros(g.shape, dtype=g.dtype) for g in in_grad]
            pyop.backward([g.asnumpy() for g in out_grad], [x.asnumpy() for x in in_data],
                          [y.asnumpy() for y in out_data], host_grad)
            for dst, src, r in zip(in_grad, host_grad, req):
                _assign(dst, r, array(src, ctx=dst.context, dtype=dst.dtype))

    class _Prop(CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=pyop.need_top_grad())

        def list_arguments(self):
            return pyop.list_arguments()

        def list_outputs(self):
            return pyop.list_outputs()

        def infer_shape(self, in_shape):
            ins, outs = pyop.infer_shape(in_shape)[:2]
            return ins, outs, []

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return _Op()

    _custom.register_prop(op_type, _Prop)
