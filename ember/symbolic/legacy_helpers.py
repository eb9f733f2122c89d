"""MXNet 1.x's Python-level `mx.sym` helpers over registry operators: linspace, eye, histogram and
split_v2 (MXNet defines them in python/mxnet/symbol/symbol.py)."""
from __future__ import annotations

import numpy as np

from .symbol import Symbol, make_op_function


def linspace(start: float, stop: float, num: int, endpoint: bool = True, name=None, dtype=None) -> Symbol:
    """Symbol of `num` evenly spaced values over [start, stop]."""
    return make_op_function("_linspace")(start=start, stop=stop, num=num, endpoint=endpoint, name=name,
                                         dtype="float32" if dtype is None else dtype)


def eye(N: int, M: int = 0, k: int = 0, dtype=None, **kwargs) -> Symbol:
    """Symbol of an N x M (M=0: N x N) matrix with ones on the k-th diagonal (float32 by default)."""
    return make_op_function("_eye")(N=N, M=M, k=k, dtype="float32" if dtype is None else dtype, **kwargs)


def histogram(a: Symbol, bins=10, range=None, **kwargs) -> Symbol:  # noqa: A002 (MXNet's name)
    """(counts, bin_edges) symbol; bins: a Symbol of edges, or a count with a required `range`."""
    if isinstance(bins, Symbol):
        return make_op_function("_histogram")(data=a, bins=bins, **kwargs)
    if isinstance(bins, (int, np.integer)):
        if range is None:
            raise ValueError("null range is not supported in symbol mode")
        return make_op_function("_histogram")(data=a, bin_cnt=bins, range=range, **kwargs)
    raise ValueError("bins argument should be either an integer or an NDArray")


def split_v2(ary: Symbol, indices_or_sections, axis: int = 0, squeeze_axis: bool = False) -> Symbol:
    """Split into `indices_or_sections` equal parts (an int) or at the given indices (a tuple)."""
    indices, sections = [], 0
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
    elif isinstance(indices_or_sections, tuple):
        indices = [0] + list(indices_or_sections)
    else:
        raise ValueError("indices_or_sections must either int or tuple of ints")
    return make_op_function("_split_v2")(ary, indices=tuple(indices), axis=axis, squeeze_axis=squeeze_axis,
                                         sections=sections)


def rand_zipfian(true_classes: Symbol, num_sampled: int, range_max: int):
    """Symbols (sampled_classes int64, expected count of each true class, expected count of each sample)
    of `num_sampled` draws from the log-uniform distribution over [0, range_max) (see mx.nd.contrib)."""
    import math
    op = make_op_function
    log_range = math.log(range_max + 1)
    rand = op("_random_uniform")(low=0.0, high=log_range, shape=(num_sampled,), dtype="float64")
    sampled = op("_mod_scalar")(op("Cast")(op("_minus_scalar")(op("exp")(rand), scalar=1.0), dtype="int64"),
                                scalar=range_max)

    def expected_count(classes):
        c = op("Cast")(classes, dtype="float64")
        ratio = op("elemwise_div")(op("_plus_scalar")(c, scalar=2.0), op("_plus_scalar")(c, scalar=1.0))
        return op("_mul_scalar")(op("log")(ratio), scalar=num_sampled / log_range)
    return sampled, expected_count(true_classes), expected_count(sampled)
