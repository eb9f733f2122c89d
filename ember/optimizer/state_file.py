"""Optimizer states as bytes without pickle: an MXNet NDArray (.params) buffer plus a JSON header.

Layout: one `.params` buffer (ember.imperative.serialization) holding
  "__ember_optimizer_states__"  a uint8 array: UTF-8 JSON header
  "s0", "s1", ...               the state arrays
The header is {"format": "ember-optimizer-states", "version": 1,
               "states": [[index, tree], ...], "optimizer": null | {...}}
where index is an int or a str and a tree is null, {"array": "s3"}, {"scalar": 1.5},
{"tuple": [tree, ...]} or {"list": [tree, ...]}.  With dump_optimizer the optimizer is
stored as its registered name and its plain-data attributes (numbers, strings, lists,
dicts, the lr scheduler as its class name and attributes, per-index update counts), and
rebuilt from the optimizer registry on load: nothing in the file can name code to run.
Bad bytes of any kind raise `base.FormatError` saying what is wrong.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Optional, Tuple

import numpy as np

from ..base import FormatError

FORMAT = "ember-optimizer-states"
VERSION = 1
HEADER_KEY = "__ember_optimizer_states__"


# -- state trees ------------------------------------------------------------------------------
def _encode_tree(state, arrays: Dict[str, np.ndarray], where: str):
    from ..imperative.ndarray import NDArray
    if state is None:
        return None
    if isinstance(state, NDArray):
        key = f"s{len(arrays)}"
        arrays[key] = state.asnumpy()
        return {"array": key}
    if isinstance(state, (bool, int, float, np.integer, np.floating)):
        return {"scalar": state.item() if isinstance(state, np.generic) else state}
    if isinstance(state, (tuple, list)):
        kind = "tuple" if isinstance(state, tuple) else "list"
        return {kind: [_encode_tree(s, arrays, where) for s in state]}
    raise TypeError(f"optimizer state of {where} is a {type(state).__name__}; only NDArrays, numbers, "
                    "None and tuples/lists of them can be saved")


def _decode_tree(tree, arrays: Dict[str, np.ndarray], where: str):
    from ..imperative.creation import array
    if tree is None:
        return None
    if isinstance(tree, dict) and len(tree) == 1:
        (kind, value), = tree.items()
        if kind == "array":
            if not isinstance(value, str) or value not in arrays or arrays[value] is None:
                raise FormatError(f"optimizer states: {where} refers to array {value!r}, which the file lacks")
            return array(arrays[value], dtype=arrays[value].dtype)
        if kind == "scalar" and isinstance(value, (bool, int, float)):
            return value
        if kind in ("tuple", "list") and isinstance(value, list):
            items = [_decode_tree(v, arrays, where) for v in value]
            return tuple(items) if kind == "tuple" else items
    raise FormatError(f"optimizer states: malformed state entry for {where}: {str(tree)[:80]}")


def _check_index(index, what: str):
    if isinstance(index, bool) or not isinstance(index, (int, str, np.integer)):
        raise TypeError(f"{what}: index {index!r} is a {type(index).__name__}; only int and str indices "
                        "can be saved")
    return int(index) if isinstance(index, np.integer) else index


# -- plain data (optimizer attributes) --------------------------------------------------------------
def _encode_value(value, where: str):
    """JSON for plain data; tuples, non-str-keyed dicts and lr schedulers are tagged."""
    from . import lr_scheduler
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float, np.integer, np.floating)):
        return value.item() if isinstance(value, np.generic) else value
    if isinstance(value, tuple):
        return {"__tuple__": [_encode_value(v, where) for v in value]}
    if isinstance(value, list):
        return [_encode_value(v, where) for v in value]
    if isinstance(value, dict):
        return {"__dict__": [[_encode_value(k, where), _encode_value(v, where)] for k, v in value.items()]}
    if isinstance(value, lr_scheduler.LRScheduler):
        return {"__lr_scheduler__": type(value).__name__,
                "attrs": {k: _encode_value(v, f"{where}.{k}") for k, v in vars(value).items()}}
    raise TypeError(f"cannot save optimizer attribute {where} of type {type(value).__name__} "
                    "(only numbers, strings, containers and lr schedulers are stored)")


def _decode_value(value, where: str):
    from . import lr_scheduler
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_decode_value(v, where) for v in value]
    if isinstance(value, dict):
        if set(value) == {"__tuple__"} and isinstance(value["__tuple__"], list):
            return tuple(_decode_value(v, where) for v in value["__tuple__"])
        if set(value) == {"__dict__"} and isinstance(value["__dict__"], list):
            out = {}
            for item in value["__dict__"]:
                if not (isinstance(item, list) and len(item) == 2):
                    raise FormatError(f"optimizer states: malformed dict item in {where}")
                key = _decode_value(item[0], where)
                try:
                    out[key] = _decode_value(item[1], where)
                except TypeError:  # an unhashable key (a list)
                    raise FormatError(f"optimizer states: unhashable dict key in {where}") from None
            return out
        if set(value) == {"__lr_scheduler__", "attrs"} and isinstance(value["attrs"], dict):
            klass = getattr(lr_scheduler, str(value["__lr_scheduler__"]), None)
            if not (isinstance(klass, type) and issubclass(klass, lr_scheduler.LRScheduler)):
                raise FormatError(f"optimizer states: unknown lr scheduler {value['__lr_scheduler__']!r} in {where}")
            sched = klass.__new__(klass)
            sched.__dict__.update({k: _decode_value(v, f"{where}.{k}") for k, v in value["attrs"].items()})
            return sched
    raise FormatError(f"optimizer states: malformed value in {where}: {str(value)[:80]}")


def _encode_optimizer(optimizer) -> dict:
    from .optimizer import _REGISTRY
    name = type(optimizer).__name__.lower()
    if _REGISTRY.get(name) is not type(optimizer):
        raise TypeError(f"cannot save optimizer {type(optimizer).__name__}: it is not registered "
                        "(decorate its class with mx.optimizer.register)")
    # not param_dict: live parameters owned by their block, not part of a saved optimizer
    attrs = {key: _encode_value(value, f"{type(optimizer).__name__}.{key}")
             for key, value in vars(optimizer).items() if key != "param_dict"}
    return {"name": name, "attrs": attrs}


def _decode_optimizer(spec):
    from .optimizer import _REGISTRY
    if not (isinstance(spec, dict) and isinstance(spec.get("name"), str) and isinstance(spec.get("attrs"), dict)):
        raise FormatError("optimizer states: malformed optimizer section")
    klass = _REGISTRY.get(spec["name"])
    if klass is None:
        raise FormatError(f"optimizer states: unknown optimizer {spec['name']!r}; registered: {sorted(_REGISTRY)}")
    optimizer = klass.__new__(klass)
    optimizer.__dict__.update({k: _decode_value(v, f"{klass.__name__}.{k}") for k, v in spec["attrs"].items()})
    optimizer.param_dict = {}
    return optimizer


# -- whole buffers --------------------------------------------------------------------------------
def dumps(states: Dict[Any, Any], optimizer=None) -> bytes:
    """Encode per-index states (and the optimizer, if given) as bytes."""
    from ..imperative import serialization
    arrays: Dict[str, np.ndarray] = {}
    entries = []
    for index, state in states.items():
        index = _check_index(index, "optimizer states")
        entries.append([index, _encode_tree(state, arrays, f"index {index!r}")])
    header = {"format": FORMAT, "version": VERSION, "states": entries,
              "optimizer": None if optimizer is None else _encode_optimizer(optimizer)}
    blob = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    return serialization.dumps({HEADER_KEY: blob, **arrays})


def loads(data) -> Tuple[Dict[Any, Any], Optional[Any]]:
    """(states by index, optimizer or None) from bytes written by `dumps`, or by MXNet 1.9.1
    (its pickled states, read without running code: ember.optimizer.mxnet_states); FormatError
    if malformed."""
    from ..imperative import serialization
    from . import mxnet_states
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"optimizer states must be bytes, got {type(data).__name__}")
    if mxnet_states.is_mxnet_pickle(data):
        try:
            return mxnet_states.loads(data)
        except FormatError as e:
            raise FormatError(f"not ember optimizer states, nor MXNet states ember can read: {e}") from None
    try:
        arrays = serialization.loads(data)
    except FormatError as e:
        raise FormatError(f"not ember optimizer states ({e})") from None
    if not isinstance(arrays, dict) or arrays.get(HEADER_KEY) is None:
        raise FormatError("not ember optimizer states: the buffer has no optimizer-states header")
    raw = arrays.pop(HEADER_KEY)
    try:
        header = json.loads(np.ascontiguousarray(raw, dtype=np.uint8).tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise FormatError(f"optimizer states: the header is not valid JSON ({e})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise FormatError("not ember optimizer states: wrong header format tag")
    if header.get("version") != VERSION:
        raise FormatError(f"optimizer states: unsupported version {header.get('version')!r} (this ember reads {VERSION})")
    entries = header.get("states")
    if not isinstance(entries, list):
        raise FormatError("optimizer states: the header has no state list")
    states = {}
    for entry in entries:
        if not (isinstance(entry, list) and len(entry) == 2) or isinstance(entry[0], bool) \
                or not isinstance(entry[0], (int, str)):
            raise FormatError(f"optimizer states: malformed entry {str(entry)[:80]}")
        states[entry[0]] = _decode_tree(entry[1], arrays, f"index {entry[0]!r}")
    optimizer = None if header.get("optimizer") is None else _decode_optimizer(header["optimizer"])
    return states, optimizer


# -- several states buffers in one file (one per kvstore server) ------------------------------------
PARTS_KEY = "__ember_state_parts__"


def dumps_parts(parts) -> bytes:
    """Several byte strings (e.g. each server's get_states) as one NDArray buffer, in order."""
    from ..imperative import serialization
    parts = list(parts)
    for i, p in enumerate(parts):
        if not isinstance(p, (bytes, bytearray)):
            raise TypeError(f"state part {i} must be bytes, got {type(p).__name__}")
    arrays = {PARTS_KEY: np.array([len(parts)], dtype=np.int64)}
    arrays.update({f"part{i}": np.frombuffer(bytes(p), dtype=np.uint8) for i, p in enumerate(parts)})
    return serialization.dumps(arrays)


def loads_parts(data) -> list:
    """The byte strings written by `dumps_parts`; FormatError if the buffer is not such a file."""
    from ..imperative import serialization
    try:
        arrays = serialization.loads(data)
    except FormatError as e:
        raise FormatError(f"not ember state parts ({e})") from None
    count = arrays.get(PARTS_KEY) if isinstance(arrays, dict) else None
    if count is None or count.dtype != np.int64 or count.shape != (1,) or count[0] < 0:
        raise FormatError("not ember state parts: the buffer has no part count")
    parts = []
    for i in range(int(count[0])):
        part = arrays.get(f"part{i}")
        if part is None or part.dtype != np.uint8 or part.ndim != 1:
            raise FormatError(f"ember state parts: part {i} of {int(count[0])} is missing or not bytes")
        parts.append(part.tobytes())
    return parts
