"""`mx.nd.contrib`: the registry's `_contrib_*` operators (`mx.nd.contrib.div_sqrt_dim` is
`_contrib_div_sqrt_dim`) and MXNet's imperative control flow: `foreach`, `while_loop`, `cond`.

The control-flow functions run the Python body once per step, so every op inside is pushed
(and recorded by autograd) like any other imperative call.
"""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

from .. import nested as _nested
from ..imperative.ndarray import NDArray
from ._prefixed import resolver
from .legacy_helpers import (boolean_mask, isfinite, isinf, isnan,  # noqa: F401  (MXNet's Python-level
                             rand_zipfian)  # contrib helpers; boolean_mask sizes its output from the index)
from .contrib_optimizer import (adamw_update, mp_adamw_update, multi_adamw_update,  # noqa: F401
                                multi_lamb_update, multi_mp_adamw_update, multi_mp_lamb_update)

_op_getattr, _op_dir = resolver("contrib", ("_contrib_",), globals())


def __getattr__(name: str):
    return _op_getattr(name)


def __dir__():
    return sorted(set(_op_dir()) | {"foreach", "while_loop", "cond", "isinf", "isfinite", "isnan", "rand_zipfian",
                                     "boolean_mask"})


# -- nested structures of NDArrays (MXNet's _flatten / _regroup) -------------------------------------
def _array_leaf(value):
    if value is None:
        return [], None
    return ([value], 0) if isinstance(value, NDArray) else None


def _flatten(value, what: str) -> Tuple[List[NDArray], Any]:
    """(flat list of NDArrays, format to rebuild the nesting); None stays None."""
    return _nested.flatten(value, _array_leaf, what, "NDArrays")


def _regroup(flat: List[NDArray], fmt):
    return _nested.regroup(flat, fmt)


def _truth(value, what: str) -> bool:
    if isinstance(value, NDArray):
        if value.size != 1:
            raise ValueError(f"{what} must be a scalar (size-1) NDArray, got shape {value.shape}")
        return bool(value.asscalar())
    return bool(value)


# -- control flow --------------------------------------------------------------------------------
def foreach(body: Callable, data, init_states):
    """Run `body(data[i], states) -> (outputs, new_states)` over axis 0 of `data`.

    Returns (outputs stacked along a new axis 0, final states); `data` may be an NDArray or a
    list of NDArrays sliced together.
    """
    from . import stack
    flat_data, _ = _flatten(data, "foreach data")
    if not flat_data:
        raise ValueError("foreach: data must hold at least one NDArray")
    _flatten(init_states, "foreach init_states")
    single = isinstance(data, NDArray)
    steps = flat_data[0].shape[0]
    if any(d.shape[0] != steps for d in flat_data):
        raise ValueError(f"foreach: every data array needs the same length on axis 0, got "
                         f"{[d.shape[0] for d in flat_data]}")
    states = init_states
    per_step, out_fmt = [], None
    for i in range(steps):
        outs, states = body(data[i] if single else [d[i] for d in data], states)
        flat, fmt = _flatten(outs, "foreach body outputs")
        if per_step and (fmt != out_fmt or len(flat) != len(per_step[0])):
            raise ValueError("foreach: the body must return outputs of the same structure at every step")
        out_fmt = fmt
        per_step.append(flat)
    stacked = [stack(*items, axis=0) for items in zip(*per_step)] if per_step else []
    outputs, _ = _regroup(stacked, out_fmt) if per_step else ([], None)
    return outputs, states


def while_loop(cond: Callable, func: Callable, loop_vars, max_iterations: int = None):
    """Repeat `func(*loop_vars) -> (step_outputs, new_loop_vars)` while `cond(*loop_vars)` holds.

    At most `max_iterations` steps; step outputs are stacked on axis 0 and padded with zeros up
    to max_iterations rows (MXNet leaves the padding uninitialised).  Returns (outputs, loop_vars).
    """
    from . import concat, expand_dims, zeros
    if max_iterations is None:
        raise ValueError("while_loop: max_iterations should be specified")
    if int(max_iterations) < 0:
        raise ValueError(f"while_loop: max_iterations must be >= 0, got {max_iterations}")
    max_iterations = int(max_iterations)
    single = isinstance(loop_vars, NDArray)
    loop_vars = [loop_vars] if single else list(loop_vars)
    _flatten(loop_vars, "while_loop loop_vars")
    steps, outputs, out_fmt = 0, [], None
    while steps < max_iterations and _truth(cond(*loop_vars), "while_loop: the value of cond"):
        step_output, new_vars = func(*loop_vars)
        if step_output is None:  # no step outputs (MXNet's while_loop allows None)
            step_output = []
        flat, fmt = _flatten(step_output, "while_loop step outputs")
        new_vars = [new_vars] if isinstance(new_vars, NDArray) else list(new_vars)
        if len(new_vars) != len(loop_vars):
            raise ValueError(f"while_loop: func returned {len(new_vars)} loop variables, expected {len(loop_vars)}")
        if outputs and (fmt != out_fmt or len(flat) != len(outputs[0])):
            raise ValueError("while_loop: func must return step outputs of the same structure at every step")
        out_fmt = fmt
        outputs.append(flat)
        loop_vars = new_vars
        steps += 1
    stacked = []
    for items in zip(*outputs):
        rows = [expand_dims(x, axis=0) for x in items]
        if steps < max_iterations:
            first = items[0]
            rows.append(zeros((max_iterations - steps,) + first.shape, ctx=first.context, dtype=first.dtype))
        stacked.append(concat(*rows, dim=0) if len(rows) > 1 else rows[0])
    result = _regroup(stacked, out_fmt)[0] if outputs else []
    return result, (loop_vars[0] if single else loop_vars)


def cond(pred, then_func: Callable, else_func: Callable):
    """then_func() if the scalar `pred` is true, else else_func() (only the taken branch runs)."""
    return then_func() if _truth(pred, "cond: pred") else else_func()
