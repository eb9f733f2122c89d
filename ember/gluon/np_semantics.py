"""Which array kind a block's code sees under NumPy array semantics (`npx.set_np()`, `use_np`).

MXNet 1.9's own layers carry a NumPy branch in each hybrid_forward (`F.npx.fully_connected` when
`is_np_array()`).  ember's layers are written once, against `mx.nd` semantics, and get the same
effect at the block boundary: under NumPy array semantics a block whose computation
(`hybrid_forward`, else `forward`) is ember's own code sees legacy views of its inputs and
parameters, any other block (the user's) sees `mx.np.ndarray`s (np symbols when traced), and
every call hands its caller the caller's kind.  So user code gets mx.np arrays from ember's
layers and ember's layers never meet numpy semantics (`reshape`'s codes, bool comparisons).
A view shares storage, engine variable and autograd entry with its array: nothing is copied.
"""
from __future__ import annotations

import threading
from typing import Dict

from ..imperative.ndarray import NDArray
from ..numpy.multiarray import ndarray as np_ndarray
from ..symbolic import np_symbol
from ..symbolic.symbol import Symbol

class _ThreadFlags(threading.local):
    legacy = False  # whether the block code running in this thread now is written against mx.nd


_state = _ThreadFlags()
_LEGACY: Dict[type, bool] = {}


def written_for_legacy(block) -> bool:
    """Whether `block`'s computation is ember's own (mx.nd semantics) rather than the user's."""
    cls = type(block)
    hit = _LEGACY.get(cls)
    if hit is None:
        fn = getattr(cls, "hybrid_forward", None)
        if fn is None or getattr(fn, "__qualname__", "") == "HybridBlock.hybrid_forward":
            fn = cls.forward  # a block computing in forward(), or a plain Block
        hit = _LEGACY[cls] = (getattr(fn, "__module__", None) or "").startswith("ember.")
    return hit


def current_is_legacy() -> bool:
    """Whether the block code running in this thread now expects legacy arrays (False outside blocks)."""
    return _state.legacy


def convert(value, legacy: bool):
    """Dense arrays and symbols in `value` (nested lists and tuples too) as legacy or numpy views."""
    t = type(value)
    if t is NDArray:
        return value if legacy else value.as_np_ndarray()
    if t is Symbol:
        return value if legacy else np_symbol.as_np(value)
    if t is np_symbol._Symbol:
        return np_symbol.as_legacy(value) if legacy else value
    if t is np_ndarray:
        return value.as_nd_ndarray() if legacy else value
    if t is list or t is tuple:
        return t(convert(v, legacy) for v in value)
    if t is dict:
        return {k: convert(v, legacy) for k, v in value.items()}
    return value


def _kinds(value, found: set) -> set:
    """The kinds ('np', 'legacy') of the arrays and symbols in `value` (nested lists and tuples)."""
    t = type(value)
    if t is np_ndarray or t is np_symbol._Symbol:
        found.add("np")
    elif t is NDArray or t is Symbol:
        found.add("legacy")
    elif t is list or t is tuple:
        for v in value:
            _kinds(v, found)
    return found


def check_one_kind(block, out) -> None:
    """TypeError when `block`'s outputs mix legacy and numpy arrays (or symbols), as MXNet refuses:
    a graph cannot group both kinds, and no single kind could be handed back to the caller."""
    if len(_kinds(out, set())) > 1:
        raise TypeError(f"Block '{block.name}' returned both legacy (mx.nd.NDArray / mx.sym.Symbol) and numpy "
                        "(mx.np.ndarray / mx.sym.np._Symbol) outputs; convert them all to one kind with "
                        "as_np_ndarray() or as_nd_ndarray()")


def call(block, args):
    """`block(*args)` under NumPy array semantics: inputs in the block's kind, outputs in the caller's."""
    outer = current_is_legacy()
    with running(block) as legacy:
        out = block._call_with_hooks(convert(args, legacy))
    if not legacy:
        check_one_kind(block, out)
    return convert(out, outer)


class running:
    """`with running(block):` code traced or run directly for `block` (not through its __call__)."""

    def __init__(self, block):
        self._legacy = written_for_legacy(block)

    def __enter__(self):
        self._outer = current_is_legacy()
        _state.legacy = self._legacy
        return self._legacy

    def __exit__(self, *exc):
        _state.legacy = self._outer
