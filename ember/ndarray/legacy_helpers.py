"""MXNet 1.x's Python-level `mx.nd` helpers written over registry operators: moveaxis, linspace,
histogram, split_v2 and onehot_encode (MXNet defines them in python/mxnet/ndarray/ndarray.py)."""
from __future__ import annotations

import warnings
from typing import Sequence, Tuple, Union

import numpy as np

from ..base import OperatorError
from ..imperative.invoke import call as _call
from ..imperative.ndarray import NDArray


def _axes(value, ndim: int, what: str) -> Tuple[int, ...]:
    items = [value] if isinstance(value, (int, np.integer)) else list(value)
    out = []
    for a in items:
        if not -ndim <= int(a) < ndim:
            raise ValueError(f"{what} axis {a} is out of range for a {ndim}-D array")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {what} argument: {tuple(items)}")
    return tuple(out)


def moveaxis_order(ndim: int, source, destination) -> Tuple[int, ...]:
    """The transpose order that moves axes `source` to positions `destination` (ValueError if invalid)."""
    src = _axes(source, ndim, "source")
    dst = _axes(destination, ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return tuple(order)


def moveaxis(tensor: NDArray, source, destination) -> NDArray:
    """Move axis/axes `source` to position(s) `destination`, keeping the others in order."""
    return _call("transpose", (tensor,), {"axes": moveaxis_order(tensor.ndim, source, destination)})


def linspace(start: float, stop: float, num: int, endpoint: bool = True, ctx=None,
             dtype="float32") -> NDArray:
    """`num` evenly spaced values over [start, stop] (stop left out when not `endpoint`)."""
    attrs = {"start": start, "stop": stop, "num": num, "endpoint": endpoint, "dtype": dtype}
    if ctx is not None:
        attrs["ctx"] = ctx
    return _call("_linspace", (), attrs)


def histogram(a: NDArray, bins: Union[int, NDArray] = 10, range=None):  # noqa: A002 (MXNet's name)
    """(counts, bin_edges) of the flattened `a`; bins: a count (with `range`) or an NDArray of edges."""
    if isinstance(bins, NDArray):
        return _call("_histogram", (a, bins), {})
    if isinstance(bins, (int, np.integer)):
        if range is None:
            warnings.warn("range is not specified, using numpy's result to ensure consistency with numpy")
            from ..imperative.creation import array
            res, edges = np.histogram(a.asnumpy(), bins=bins)
            return array(res), array(edges)
        return _call("_histogram", (a,), {"bin_cnt": bins, "range": range})
    raise ValueError("bins argument should be either an integer or an NDArray")


def split_indices(axis_size: int, indices_or_sections) -> Sequence[int]:
    """The `indices` attribute of _split_v2 for split_v2's `indices_or_sections` argument."""
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0 or axis_size % sections:
            raise ValueError("array split does not result in an equal division")
        size = axis_size // sections
        return [i * size for i in range(sections)]
    if isinstance(indices_or_sections, tuple):
        return [0] + list(indices_or_sections)
    raise ValueError("indices_or_sections must either int or tuple of ints")


def split_v2(ary: NDArray, indices_or_sections, axis: int = 0, squeeze_axis: bool = False):
    """Split `ary` into equal sections (an int) or at the given indices (a tuple), as numpy.split."""
    indices = split_indices(ary.shape[axis], indices_or_sections)
    return _call("_split_v2", (ary,), {"indices": tuple(indices), "axis": axis, "squeeze_axis": squeeze_axis})


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """Write the one-hot rows of `indices` into the 2-D `out` and return it."""
    return _call("_onehot_encode", (indices, out), {"out": out})


# -- mx.nd.contrib.isinf / isfinite / isnan (1 where true, 0 elsewhere, in the data's dtype) -------------
def isinf(data: NDArray) -> NDArray:
    """1 where `data` is +-inf."""
    return _call("_equal_scalar", (_call("abs", (data,), {}),), {"scalar": np.inf})


def isfinite(data: NDArray) -> NDArray:
    """1 where `data` is neither inf nor NaN."""
    not_nan = _call("_equal", (data, data), {})
    not_inf = _call("_not_equal_scalar", (_call("abs", (data,), {}),), {"scalar": np.inf})
    return _call("_logical_and", (not_inf, not_nan), {})


def isnan(data: NDArray) -> NDArray:
    """1 where `data` is NaN."""
    return _call("_not_equal", (data, data), {})


# -- mx.nd.contrib.rand_zipfian ---------------------------------------------------------------------------
def rand_zipfian(true_classes: NDArray, num_sampled: int, range_max: int, ctx=None):
    """Draw `num_sampled` classes from the approximate Zipfian (log-uniform) distribution over
    [0, range_max): P(c) = log((c + 2) / (c + 1)) / log(range_max + 1).

    Returns (sampled_classes int64, expected count of each true class, expected count of each sample),
    the counts being probability * num_sampled, as MXNet's sampled-softmax helper.
    """
    import math
    if ctx is None:
        ctx = true_classes.context
    log_range = math.log(range_max + 1)
    rand = _call("_random_uniform", (), {"low": 0.0, "high": log_range, "shape": (num_sampled,),
                                           "dtype": "float64", "ctx": ctx})
    # exp(u) - 1 for u uniform in [0, log(range_max + 1)) is log-uniform; the modulo keeps rounding in range
    sampled = _call("_mod_scalar", (_call("Cast", (_call("_minus_scalar", (_call("exp", (rand,), {}),),
                                                         {"scalar": 1.0}),), {"dtype": "int64"}),),
                    {"scalar": range_max})

    def expected_count(classes):
        c = _call("Cast", (classes,), {"dtype": "float64"})
        ratio = _call("elemwise_div", (_call("_plus_scalar", (c,), {"scalar": 2.0}),
                                       _call("_plus_scalar", (c,), {"scalar": 1.0})), {})
        return _call("_mul_scalar", (_call("log", (ratio,), {}),), {"scalar": num_sampled / log_range})
    true_cls = true_classes.as_in_context(ctx) if hasattr(true_classes, "as_in_context") else true_classes
    return sampled, expected_count(true_cls), expected_count(sampled)


# -- mx.nd.contrib.boolean_mask ---------------------------------------------------------------------------
def boolean_mask(data: NDArray, index: NDArray, axis: int = 0, out=None) -> NDArray:
    """The slices of `data` along `axis` where `index` (1-D, one entry per slice) is non-zero.

    Runs the registry op `_contrib_boolean_mask` (so autograd differentiates it with its backward
    op).  Its output length depends on the index values, which shape inference cannot know: this
    reads the index (waiting for it, as MXNet's operator does) to size the output, then runs the
    op through the ordinary dispatch (engine dependencies, out= checks, autograd taping).
    """
    from ..imperative import autograd_state
    from ..imperative.invoke import _record, allocate, check, dispatch
    from ..ops import registry
    opdef = registry.get("_contrib_boolean_mask")
    attrs = opdef.parse_attrs({"axis": axis})
    inputs = [data, index]
    dev = check(opdef, attrs, inputs)
    if dev is None:
        raise OperatorError("boolean_mask: sparse inputs are not supported (MXNet has no sparse kernel); "
                            "convert them with tostype('default')")
    shape = list(opdef.shapes(attrs, [data.shape, index.shape])[1][0])  # checks index against data
    ax = attrs["axis"] % data.ndim
    shape[ax] = int(np.count_nonzero(index.asnumpy()))
    outputs = allocate(opdef, attrs, [tuple(shape)], [data.dtype], dev, out)
    dispatch(opdef, attrs, inputs, outputs, dev, given=out is not None)
    if autograd_state.is_recording():
        _record(opdef, attrs, inputs, outputs, autograd_state.is_training())
    return outputs[0]


# -- the sparse kernel of _contrib_getnnz (the registry op in ember/ops/sparse_info.py) -------------------
def _getnnz_sparse_kernel(inputs, attrs):
    from ..imperative.creation import array
    from ..imperative.sparse_ndarray import CSRNDArray
    from ..ops.sparse_info import nnz_counts
    x = inputs[0]
    if not isinstance(x, CSRNDArray):
        return None  # the dense kernel refuses it, as MXNet
    counts = nnz_counts(x.indptr.asnumpy(), x.indices.asnumpy(), x.shape, attrs["axis"])
    return array(counts, ctx=x.context, dtype="int64")


def _install_sparse_kernels() -> None:
    from ..imperative import sparse_ops
    sparse_ops.SPARSE_KERNELS.setdefault("_contrib_getnnz", _getnnz_sparse_kernel)


_install_sparse_kernels()
