"""Autograd bookkeeping shared by NDArray and the invoke path: flags, leaves and graph entries.

Recording and training flags are per thread, as in MXNet.  An NDArray's `_ag` is
None (not in a graph), a `Leaf` (a variable from attach_grad/mark_variables) or
an `Entry` (output `index` of a recorded `Node`).
"""
from __future__ import annotations

import threading

class _ThreadFlags(threading.local):
    """This thread's flags (class attributes: the defaults every thread starts from; reading them
    costs an attribute lookup, not getattr's missing-attribute path)."""

    recording = False
    training = False


_state = _ThreadFlags()

GRAD_REQS = ("write", "add", "null")


def is_recording() -> bool:
    return _state.recording


def is_training() -> bool:
    return _state.training


def set_recording(flag: bool) -> bool:
    prev = _state.recording
    _state.recording = bool(flag)
    return prev


def set_training(flag: bool) -> bool:
    prev = _state.training
    _state.training = bool(flag)
    return prev


class Leaf:
    """An autograd variable: where its gradient goes and how (write/add/null).

    fresh_grad: backward wrote the gradient since the flag was last cleared (MXNet's
    fresh_out_grad, which gluon.Trainer reads to find stale gradients and clears after updating).
    """

    __slots__ = ("grad", "grad_req", "fresh_grad")

    def __init__(self, grad, grad_req: str):
        self.grad = grad
        self.grad_req = grad_req
        self.fresh_grad = False


class Node:
    """One recorded op: enough to call its registry gradient later.

    Outputs are kept as (data, chunk) pairs, not NDArrays, so the output arrays
    (which point back at this node) and the node form no reference cycle.
    """

    # __weakref__: a hybridized block's executor stays reserved while its recorded node lives
    __slots__ = ("opdef", "attrs", "inputs", "outputs", "is_train", "freed", "aux", "__weakref__")

    def __init__(self, opdef, attrs, inputs, outputs, is_train, aux=()):
        self.opdef = opdef
        self.attrs = attrs
        self.inputs = inputs
        self.outputs = outputs
        self.is_train = is_train
        self.freed = False
        self.aux = aux   # the aux states (a sequence), kept only for an op whose gradient takes them


class Entry:
    """Output `index` of the recorded `node`."""

    __slots__ = ("node", "index")

    def __init__(self, node: Node, index: int):
        self.node = node
        self.index = index


def check_grad_req(grad_req: str) -> str:
    if grad_req not in GRAD_REQS:
        raise ValueError(f"grad_req must be one of {list(GRAD_REQS)}, got {grad_req!r}")
    return grad_req


def attach_grad(arr, grad_req: str = "write", stype=None) -> None:
    """Give `arr` a zero gradient buffer of storage type `stype` (default: the array's own, as
    MXNet) and make it a variable."""
    from .creation import zeros
    check_grad_req(grad_req)
    arr._chunk.check()
    grad = zeros(arr.shape, ctx=arr.context, dtype=arr._data.dtype, stype=stype or arr.stype)
    arr._ag = Leaf(grad, grad_req)


def mark_variable(arr, grad, grad_req: str) -> None:
    check_grad_req(grad_req)
    if grad.shape != arr.shape:
        raise ValueError(f"mark_variables: gradient shape {grad.shape} differs from variable shape {arr.shape}")
    arr._ag = Leaf(grad, grad_req)


def needs_record(arr) -> bool:
    """Whether an op on `arr` now must be recorded (recording on and `arr` in a graph)."""
    return arr._ag is not None and _state.recording
