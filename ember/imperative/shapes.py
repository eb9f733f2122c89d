"""MXNet's reshape rules (special values 0, -1, -2, -3, -4 and reverse), shared by views and ops."""
from __future__ import annotations

from typing import Sequence, Tuple

from ..base import ShapeError


def _prod(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def mxnet_reshape(src: Sequence[int], target: Sequence[int], reverse: bool = False) -> Tuple[int, ...]:
    """The shape MXNet's Reshape gives an array of shape `src` for the `target` spec.

    0 copies the matching input dim, -1 infers one dim, -2 copies the remaining
    dims, -3 merges two consecutive input dims, -4 splits one input dim into the
    next two values (one of which may be -1).  reverse=True matches from the right.
    """
    src, target = tuple(src), tuple(int(t) for t in target)
    if reverse:
        if -4 in target:
            raise ShapeError("reshape: reverse=True cannot be combined with -4")
        return tuple(reversed(mxnet_reshape(src[::-1], target[::-1])))
    out = []
    infer_at = -1
    s = 0
    i = 0

    def need(k: int):
        if s + k > len(src):
            raise ShapeError(f"reshape: spec {target} needs more input dims than shape {src} has")

    while i < len(target):
        t = target[i]
        if t > 0:
            out.append(t)
            s += 1
        elif t == 0:
            need(1)
            out.append(src[s])
            s += 1
        elif t == -1:
            if infer_at >= 0:
                raise ShapeError(f"reshape: more than one -1 in {target}")
            infer_at = len(out)
            out.append(-1)
            s += 1
        elif t == -2:
            out.extend(src[s:])
            s = len(src)
        elif t == -3:
            need(2)
            out.append(src[s] * src[s + 1])
            s += 2
        elif t == -4:
            need(1)
            if i + 2 >= len(target):
                raise ShapeError(f"reshape: -4 in {target} must be followed by two values")
            d1, d2 = target[i + 1], target[i + 2]
            dim = src[s]
            if d1 == -1 and d2 == -1:
                raise ShapeError(f"reshape: -4 split in {target} has two -1 values")
            if d1 == -1:
                d1 = dim // d2 if d2 else 0
            elif d2 == -1:
                d2 = dim // d1 if d1 else 0
            if d1 * d2 != dim:
                raise ShapeError(f"reshape: cannot split dim {dim} of {src} into ({target[i + 1]}, {target[i + 2]})")
            out.extend((d1, d2))
            s += 1
            i += 2
        else:
            raise ShapeError(f"reshape: invalid value {t} in shape {target}")
        i += 1
    total = _prod(src)
    if infer_at >= 0:
        known = _prod(d for d in out if d != -1)
        if known == 0 or total % known:
            raise ShapeError(f"reshape: cannot reshape array of shape {src} into {target}")
        out[infer_at] = total // known
    if _prod(out) != total:
        raise ShapeError(f"reshape: cannot reshape array of shape {src} (size {total}) into {tuple(out)}")
    return tuple(out)
