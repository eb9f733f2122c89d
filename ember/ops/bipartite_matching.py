"""_contrib_bipartite_matching (MXNet's `mx.nd/sym.contrib.bipartite_matching`): greedy bipartite
matching on a score matrix, per batch.

data (..., N, M): all N*M scores are visited best first (descending, or ascending with
`is_ascend`; equal scores in row-major order); a pair is matched when neither its row nor its
column is matched yet and its score is strictly beyond `threshold` (> it descending, < it
ascending).  Matching stops after `topk` + 1 matches (-1: no limit; MXNet 1.9.1's count, kept for
equal results).  Outputs: the matched column of each row (..., N) and the matched row of each
column (..., M), -1 where none; zero gradient, as MXNet 1.9.1.
"""
from __future__ import annotations

import numpy as np

from ..base import ShapeError
from ._common import no_gradient
from .registry import Attr, OpDef, register

_NAME = "_contrib_bipartite_matching"


def _infer_shape(attrs, in_shapes):
    d = in_shapes[0]
    if d is None:
        return in_shapes, [None, None]
    if len(d) < 2:
        raise ShapeError(f"{_NAME}: data must have at least 2 dimensions (N, M), got shape {tuple(d)}")
    return in_shapes, [tuple(d[:-1]), tuple(d[:-2]) + (d[-1],)]


def _match(scores, attrs):
    n, m = scores.shape
    flat = scores.ravel()
    order = np.argsort(flat if attrs["is_ascend"] else -flat, kind="stable")
    rows = np.full(n, -1, dtype=np.int64)
    cols = np.full(m, -1, dtype=np.int64)
    count, topk, thresh = 0, attrs["topk"], attrs["threshold"]
    for k in order:
        s = flat[k]
        if (s >= thresh) if attrs["is_ascend"] else (s <= thresh):  # strictly better than it, as MXNet
            break  # sorted: every later score misses the threshold too
        i, j = divmod(int(k), m)
        if rows[i] < 0 and cols[j] < 0:
            rows[i], cols[j] = j, i
            count += 1
            if 0 < topk < count:  # MXNet 1.9.1 stops after topk + 1 matches (its check follows the match)
                break
    return rows, cols


def _kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    data = inputs[0]
    n, m = data.shape[-2], data.shape[-1]
    host = data.reshape(-1, n, m)
    host = host.get() if hasattr(host, "get") else np.asarray(host)  # a sequential greedy loop: host
    rows = np.empty((host.shape[0], n), dtype=np.int64)
    cols = np.empty((host.shape[0], m), dtype=np.int64)
    for b in range(host.shape[0]):
        rows[b], cols[b] = _match(host[b], attrs)
    outputs[0][...] = xp.asarray(rows.reshape(outputs[0].shape).astype(outputs[0].dtype))
    outputs[1][...] = xp.asarray(cols.reshape(outputs[1].shape).astype(outputs[1].dtype))


register(OpDef(
    name=_NAME,
    attrs={"is_ascend": Attr("bool", False), "threshold": Attr("float"), "topk": Attr("int", -1)},
    inputs=["data"], outputs=["output0", "output1"], infer_shape=_infer_shape,
    infer_type=lambda a, d: (d, [d[0], d[0]]), kernels={"any": _kernel}, gradient=no_gradient(1),
    doc="Greedy bipartite matching of rows to columns by score (see the module docstring)."))
