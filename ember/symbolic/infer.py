"""Shape and dtype inference over a graph (the `infer_shape` / `infer_type` passes).

Values live per entry, keyed ``(id(node), output_index)``; variables have one entry.
Operators may fill in their inputs' shapes too (a FullyConnected infers its weight),
so the pass sweeps the graph until nothing changes, forward then backward, as NNVM does.
"""
from __future__ import annotations

from typing import Dict, Sequence, Tuple

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from .graph import Node

Key = Tuple[int, int]


def _merge(known, new, node: Node, what: str, kind: str, err_type):
    """Combine a known value with a newly inferred one; a conflict names the node and both values."""
    if new is None:
        return known, False
    if known is None:
        return new, True
    if kind == "shape":
        if len(known) != len(new):
            raise err_type(f"{kind} inference: conflicting shapes for {what} of node '{node.name}' "
                           f"({node.op.name if node.op else 'variable'}): {tuple(known)} vs {tuple(new)}")
        merged = []
        changed = False
        for a, b in zip(known, new):
            if a in (None, 0):
                merged.append(b)
                changed = changed or b not in (None, 0)
            elif b in (None, 0) or a == b:
                merged.append(a)
            else:
                raise err_type(f"shape inference: conflicting shapes for {what} of node '{node.name}' "
                               f"({node.op.name if node.op else 'variable'}): {tuple(known)} vs {tuple(new)}")
        return tuple(merged), changed
    if np.dtype(known) != np.dtype(new):
        raise err_type(f"type inference: conflicting dtypes for {what} of node '{node.name}' "
                       f"({node.op.name if node.op else 'variable'}): {np.dtype(known).name} vs {np.dtype(new).name}")
    return known, False


def _complete(value, kind: str) -> bool:
    if value is None:
        return False
    if kind == "shape":  # a 0 is unknown in MXNet 1.x, a real (empty) size under NumPy shape semantics
        return None not in value and (0 not in value or _np_shape())
    return True


def _np_shape() -> bool:
    from ..util import is_np_shape
    return is_np_shape()


def _run(order: Sequence[Node], known: Dict[Key, object], kind: str) -> Dict[Key, object]:
    err_type = ShapeError if kind == "shape" else DTypeError
    values: Dict[Key, object] = dict(known)
    is_shape = kind == "shape"
    done = _complete if is_shape else (lambda v, _k: v is not None)
    # per node, once: (node, attrs, data-input count, input keys, output keys)
    pending = [(n, n.parsed_attrs, n.num_inputs(), [(id(c), i) for c, i in n.inputs],
                [(id(n), i) for i in range(n.num_outputs())]) for n in order if n.op is not None]
    get = values.get
    # Big graphs repeat (operator, attributes, input values) a lot: infer each combination once.
    memo: Dict[tuple, tuple] = {}
    attr_keys: Dict[int, object] = {}
    for sweep in range(len(pending) + 2):
        changed = False
        still = []
        for item in pending:
            node, attrs, k, in_keys, out_keys = item
            ins = [get(key) for key in in_keys]
            # outputs first: on the first sweep they are unknown and the input check is skipped
            first = get(out_keys[0]) if out_keys else ()
            if (first is not None and done(first, kind) and all(done(get(o), kind) for o in out_keys)
                    and all(done(v, kind) for v in ins)):
                continue
            still.append(item)
            akey = attr_keys.get(id(node))
            if akey is None:
                try:
                    akey = (node.op.name, tuple(sorted(attrs.items())))
                    hash(akey)
                except TypeError:  # an unhashable attribute value: no memo for this node
                    akey = False
                attr_keys[id(node)] = akey
            mkey = (akey, tuple(ins)) if akey else None
            try:
                hit = memo.get(mkey) if mkey is not None else None
                if hit is not None:
                    new_in, new_out, new_aux = hit
                elif is_shape:
                    new_in, new_out, new_aux = node.op.shapes(attrs, ins[:k], ins[k:])
                else:
                    new_in, new_out, new_aux = node.op.dtypes(attrs, ins[:k])
                if mkey is not None and hit is None:
                    memo[mkey] = (new_in, new_out, new_aux)
            except (ShapeError, DTypeError) as e:
                raise err_type(f"{kind} inference failed at node '{node.name}' ({node.op.name}) with input "
                               f"{kind}s {_named(node, ins, kind)}: {e}") from None
            except OperatorError:
                raise
            except Exception as e:  # noqa: BLE001 - an op that cannot work from partial inputs yet
                if all(done(v, kind) for v in ins[:k]):
                    raise err_type(f"{kind} inference failed at node '{node.name}' ({node.op.name}) with input "
                                   f"{kind}s {_named(node, ins, kind)}: {type(e).__name__}: {e}") from None
                new_in, new_out, new_aux = (), (), None  # outputs may still tell something about inputs
            new_ins = list(new_in) + list(new_aux or []) if new_aux else new_in
            ch, complete_in = _merge_list(values, in_keys, new_ins, node, kind, err_type, True)
            changed |= ch
            ch, complete_out = _merge_list(values, out_keys, new_out, node, kind, err_type, False)
            changed |= ch
            if is_shape and not complete_out and not any(v is not None for v in new_out) \
                    and node.op.probe_partial_shapes:
                # an op whose inference needs whole shapes (it learned nothing): learn what does not
                # depend on unknown dims; an op that handles them itself keeps its own answer (MXNet's)
                probed = _probe(node, attrs, [get(key) for key in in_keys], k)
                if probed is not None:
                    ch, complete_in = _merge_list(values, in_keys, probed[0], node, kind, err_type, True)
                    changed |= ch
                    ch, complete_out = _merge_list(values, out_keys, probed[1], node, kind, err_type, False)
                    changed |= ch
            if not complete_in:  # backward inference: what the outputs known so far say about the inputs
                changed |= _from_outputs(node, attrs, in_keys, out_keys, values, kind, err_type)
                complete_in = all(done(get(key), kind) for key in in_keys)
            complete = complete_in and complete_out
            if complete:
                still.pop()  # nothing left to learn here (a later sweep would skip it anyway)
        # only nodes that were incomplete can still change; the next sweep goes the other way
        pending = still[::-1]
        if not pending or (not changed and sweep > 0):
            break
    return values


def _merge_list(values, keys, new_vals, node: Node, kind: str, err_type, inputs: bool):
    """Merge an op's inferred values for its inputs (or outputs) into `values`: (changed, all complete)."""
    changed = False
    complete = True
    done = _complete if kind == "shape" else (lambda v, _k: v is not None)
    for j, key in enumerate(keys):
        old = values.get(key)
        if j < len(new_vals) and new_vals[j] is not None:
            nv = _norm(new_vals[j], kind)
            if old is None or old != nv:
                what = f"input {j} ('{node.inputs[j][0].name}')" if inputs else f"output {j}"
                values[key], ch = _merge(old, nv, node, what, kind, err_type)
                changed |= ch
                old = values[key]
        if complete and not done(old, kind):
            complete = False
    return changed, complete


# Stand-ins for unknown dimensions when probing (highly divisible, so splits and reshapes accept them).
_PROBES = (720720, 1441440)


def _probe(node: Node, attrs, ins, k: int):
    """Inference of an op whose shape function needs whole input shapes, from partially known ones.

    Unknown dimensions are replaced by two different stand-in sizes in turn; a dimension of an input
    or output that comes out the same both times does not depend on them and is known, the others
    stay unknown.  None when there is nothing to probe or the op refuses a stand-in."""
    if not any(v is not None and None in v for v in ins):
        return None
    runs = []
    for p in _PROBES:
        filled = [None if v is None else tuple(p if d is None else d for d in v) for v in ins]
        try:
            new_in, new_out, new_aux = node.op.shapes(attrs, filled[:k], filled[k:])
        except Exception:  # noqa: BLE001 - the stand-in broke a constraint: learn nothing
            return None
        runs.append((list(new_in) + list(new_aux or []) if new_aux else list(new_in), list(new_out)))
    (in1, out1), (in2, out2) = runs
    return [_agree(a, b) for a, b in zip(in1, in2)], [_agree(a, b) for a, b in zip(out1, out2)]


def _agree(a, b):
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y and x not in _PROBES else None for x, y in zip(a, b))


def _from_outputs(node: Node, attrs, in_keys, out_keys, values, kind: str, err_type) -> bool:
    """Merge into `values` the input values that node's known outputs imply; True if anything changed."""
    outs = [values.get(key) for key in out_keys]
    if all(v is None for v in outs):
        return False
    ins = [values.get(key) for key in in_keys]
    try:
        implied = node.op.inputs_from_outputs(kind, attrs, ins, outs)
    except (ShapeError, DTypeError) as e:
        raise err_type(f"{kind} inference failed at node '{node.name}' ({node.op.name}) with input {kind}s "
                       f"{_named(node, ins, kind)} and output {kind}s {[_show(v, kind) for v in outs]}: {e}") from None
    except OperatorError:
        raise
    except Exception:  # noqa: BLE001 - partial values the op's backward rule cannot use yet
        return False
    changed = False
    for j, key in enumerate(in_keys):
        if implied is None or j >= len(implied) or implied[j] is None:
            continue
        nv = _norm(implied[j], kind)
        old = values.get(key)
        if old is None or old != nv:
            child = node.inputs[j][0]
            values[key], ch = _merge(old, nv, node, f"input {j} ('{child.name}')", kind, err_type)
            changed |= ch
    return changed


def unknown_dims_as_none(shape):
    """MXNet 1.x's shape convention -> inference's: a 0 dimension is unknown (None); () is a fully unknown shape."""
    if shape is None:
        return None
    shape = tuple(shape)
    if not shape:
        return None
    if 0 in shape:
        return tuple(None if d == 0 else d for d in shape)
    return shape


# shape as an op returned it -> the same shape as a tuple of Python ints (or None).  Ops return
# few distinct shapes, so a dict lookup replaces a per-dimension type check on every call.
_NORMALIZED: Dict[tuple, tuple] = {}


def _norm(v, kind):
    if v is None:
        return None
    if kind == "shape":
        if type(v) is tuple:
            hit = _NORMALIZED.get(v)
            if hit is not None and hit == v:  # == guards hash-equal values of another kind (1.0 vs 1)
                return hit
        norm = tuple(None if d is None else int(d) for d in v)
        if type(v) is tuple and len(_NORMALIZED) < 100000:
            _NORMALIZED[v] = norm
        return norm
    return v if type(v) is np.dtype or isinstance(v, np.dtype) else np.dtype(v)


def _named(node: Node, ins, kind) -> str:
    return "[" + ", ".join(f"{c.output_name(i)}={_show(v, kind)}" for (c, i), v in zip(node.inputs, ins)) + "]"


def _show(v, kind):
    if v is None:
        return None
    return tuple(v) if kind == "shape" else np.dtype(v).name


def infer_shapes(order: Sequence[Node], known: Dict[Key, tuple], zero_is_unknown: bool = True) -> Dict[Key, tuple]:
    """Every entry's shape that can be inferred from `known` (raises ShapeError on conflicts).

    A 0 dimension in `known` means unknown (MXNet 1.x; not under NumPy shape semantics, where the
    caller gives unknown dimensions as None); it is None in the result until inferred."""
    if zero_is_unknown:
        known = {k: (unknown_dims_as_none(v) if v is not None and (0 in v or not v) else v)
                 for k, v in known.items()}
    return _run(order, known, "shape")


def infer_dtypes(order: Sequence[Node], known: Dict[Key, np.dtype]) -> Dict[Key, np.dtype]:
    """Every entry's dtype that can be inferred from `known` (raises DTypeError on conflicts)."""
    return _run(order, known, "dtype")


def is_complete_shape(shape) -> bool:
    return _complete(shape, "shape")
