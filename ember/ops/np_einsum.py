"""`_npi_einsum` (numpy.einsum, MXNet 1.9.1's operator) and its backward op `_backward_npi_einsum`.

Attributes as MXNet's: `num_args` (the operand count, MXNet's key_var_num_args; inputs arg0, arg1, ...),
`subscripts` (the subscript string) and `optimize` (0 or 1: contract in the order numpy's greedy path
picks; the result is the same).

The subscripts are parsed once per call into explicit terms (`parse`): spaces dropped, each `...`
replaced by letters the string does not use (right-aligned, so operands with fewer broadcast
dimensions share the trailing ones), and in implicit mode the output is the ellipsis letters then
every label used once, in sorted (ASCII) order.  A label's size is the largest among the operands;
a size of 1 broadcasts against it (MXNet's rule).  A bad string raises ShapeError (an MXNetError, as
MXNet's CHECK in shape inference) with MXNet's message for the problem.

The gradient w.r.t. each operand is an einsum of the output gradient with the other operands onto
the operand's own labels, spread back onto repeated labels (a trace's gradient is a diagonal),
broadcast over labels no other term has and summed over the operand's broadcast (size-1) axes.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from ..base import ShapeError
from ._common import same_type
from .registry import Attr, OpDef, register

_NAME = "_npi_einsum"
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _fail(msg: str) -> None:
    raise ShapeError(f"{_NAME}: {msg}")


def _expand_ellipses(terms: List[str], out: Optional[str], ndims: Sequence[int], spare: str):
    """The terms (and output) with each `...` replaced by letters from `spare`; also those letters."""
    longest = 0
    expanded = []
    for i, term in enumerate(terms):
        if "." in term:
            if term.count(".") != 3 or term.count("...") != 1:
                _fail(f"Invalid Ellipses in subscript '{term}' of operand {i}")
            count = 0 if ndims[i] == 0 else ndims[i] - (len(term) - 3)
            if count < 0:
                _fail(f"Ellipses lengths do not match: subscript '{term}' has more labels than operand {i} "
                      f"has dimensions ({ndims[i]})")
            longest = max(longest, count)
            term = term.replace("...", spare[len(spare) - count:] if count else "")
        expanded.append(term)
    ell = spare[len(spare) - longest:] if longest else ""
    if out is not None and "." in out:
        if out.count(".") != 3 or out.count("...") != 1:
            _fail(f"Invalid Ellipses in output subscript '{out}'")
        out = out.replace("...", ell)
    return expanded, out, ell


def parse(subscripts: str, ndims: Sequence[int]) -> Tuple[List[str], str]:
    """(one explicit term per operand, the output term) for `subscripts` over operands of `ndims`
    dimensions; ShapeError naming the problem for an invalid string."""
    if not isinstance(subscripts, str):
        _fail(f"subscripts must be a string, got {type(subscripts).__name__}")
    if not ndims:
        _fail("No input operands")
    s = subscripts.replace(" ", "")
    for c in s:
        if c not in ".,->" and c not in _LETTERS:
            _fail(f"Character {c} is not a valid symbol.")
    out: Optional[str] = None
    if "-" in s or ">" in s:
        if s.count("-") > 1 or s.count(">") > 1 or s.count("->") != 1:
            _fail("Subscripts can only contain one '->'.")
        s, out = s.split("->")
    terms = s.split(",")
    if len(terms) != len(ndims):
        _fail(f"Number of einsum subscripts must be equal to the number of operands "
              f"({len(terms)} subscripts, {len(ndims)} operands).")
    ell = ""
    if "." in subscripts:
        spare = "".join(c for c in _LETTERS if c not in s and (out is None or c not in out))
        terms, out, ell = _expand_ellipses(terms, out, ndims, spare)
    labels = "".join(terms)
    if out is None:  # implicit mode: the broadcast letters, then the labels used once, sorted
        out = ell + "".join(sorted(c for c in set(labels) if labels.count(c) == 1 and c not in ell))
    for c in out:
        if c not in labels:
            _fail(f"Output character {c} did not appear in the input")
        if out.count(c) > 1:
            _fail(f"Output character {c} appears more than once in the output subscript '{out}'")
    for i, term in enumerate(terms):
        if len(term) != ndims[i]:
            _fail(f"Einstein sum subscript {term} does not contain the correct number of indices for operand {i} "
                  f"(it has {ndims[i]} dimensions).")
    return terms, out


def label_sizes(terms: Sequence[str], shapes: Sequence[Sequence[int]]) -> Dict[str, int]:
    """Each label's size: the largest among the operands, every other one equal to it or 1 (broadcast)."""
    sizes: Dict[str, int] = {}
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        mine: Dict[str, int] = {}
        for c, d in zip(term, shape):
            if c in mine and mine[c] != d:  # a repeated label within one operand takes a diagonal
                _fail(f"dimensions in operand {i} for collapsing index '{c}' don't match ({mine[c]} != {d})")
            mine[c] = d
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c] = d
            elif d != 1 and d != seen:
                _fail(f"Size of label '{c}' for operand {i} ({d}) does not match previous terms ({seen}).")
    return sizes


def _infer_shape(attrs, in_shapes):
    if any(s is None or None in s for s in in_shapes):
        return in_shapes, [None]
    terms, out = parse(attrs["subscripts"], [len(s) for s in in_shapes])
    sizes = label_sizes(terms, in_shapes)
    return in_shapes, [tuple(sizes[c] for c in out)]


def _explicit(terms: Sequence[str], out: str) -> str:
    return ",".join(terms) + "->" + out


def _forward(ctx, attrs, inputs, outputs, aux):
    terms, out = parse(attrs["subscripts"], [x.ndim for x in inputs])
    res = ctx.xp.einsum(_explicit(terms, out), *inputs, optimize=bool(attrs["optimize"]))
    outputs[0][...] = res


def _operand_grad(xp, k: int, terms, out: str, sizes, g, operands, optimize: bool):
    """d(sum(g * einsum)) / d operand k, in the operand's own shape."""
    term = terms[k]
    others = [(terms[j], operands[j]) for j in range(len(terms)) if j != k]
    present = set(out).union(*(set(t) for t, _ in others))
    uniq = "".join(dict.fromkeys(term))  # the operand's labels, each once, in order
    kept = "".join(c for c in uniq if c in present)  # labels an einsum can produce
    spec = ",".join([out] + [t for t, _ in others]) + "->" + kept
    part = xp.einsum(spec, g, *[x for _, x in others], optimize=optimize)
    # labels only this operand has get the gradient broadcast along them
    part = part.reshape(tuple(part.shape[kept.index(c)] if c in kept else 1 for c in uniq))
    full = xp.zeros(tuple(sizes[c] for c in term), dtype=part.dtype)
    if len(uniq) == len(term):
        full[...] = part
    else:  # repeated labels: write onto the diagonal (a strided view of the repeated axes)
        strides = tuple(sum(full.strides[p] for p, c in enumerate(term) if c == u) for u in uniq)
        view = xp.lib.stride_tricks.as_strided(full, shape=tuple(sizes[c] for c in uniq), strides=strides)
        view[...] = part
    shape = operands[k].shape
    axes = tuple(p for p, d in enumerate(shape) if d == 1 and full.shape[p] != 1)
    return full.sum(axis=axes, keepdims=True) if axes else full


def _backward(ctx, attrs, inputs, outputs, aux):
    g, operands = inputs[0], inputs[1:]
    terms, out = parse(attrs["subscripts"], [x.ndim for x in operands])
    sizes = label_sizes(terms, [x.shape for x in operands])
    for k, dst in enumerate(outputs):
        dst[...] = _operand_grad(ctx.xp, k, terms, out, sizes, g, operands, bool(attrs["optimize"]))


def _args(attrs) -> List[str]:
    n = attrs["num_args"]
    if n < 1:
        raise ShapeError(f"{_NAME}: num_args must be >= 1, got {n}")
    return [f"arg{i}" for i in range(n)]


_ATTRS = {"num_args": Attr("int", doc="the number of operands"),
          "subscripts": Attr("str", "", doc="numpy.einsum's subscript string"),
          "optimize": Attr("int", 0, doc="1: contract in numpy's greedy order")}

register(OpDef(
    name="_backward" + _NAME, attrs=_ATTRS,
    inputs=lambda a: ["ograd"] + _args(a), outputs=lambda a: [f"arg{i}_grad" for i in range(a["num_args"])],
    infer_shape=lambda a, s: (s, list(s[1:])),
    infer_type=lambda a, d: (list(d), list(d[1:])),
    kernels={"any": _backward},
    doc="Gradient of _npi_einsum w.r.t. every operand."))

register(OpDef(
    name=_NAME, attrs=_ATTRS, inputs=_args, outputs=["out"], key_var_num_args="num_args",
    infer_shape=_infer_shape, infer_type=same_type(_NAME), kernels={"any": _forward},
    gradient=lambda F, a, i, o, g: (lambda r: [r] if a["num_args"] == 1 else list(r))(
        getattr(F, "_backward" + _NAME)(g[0], *i, **a)),
    expensive=True,
    doc="numpy.einsum: the Einstein summation `subscripts` of the operands (see ember/ops/np_einsum.py)."))
