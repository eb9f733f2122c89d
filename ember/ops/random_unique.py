"""`_sample_unique_zipfian`: per batch row, `num_sampled` distinct classes from the log-uniform (Zipfian)
distribution over [0, range_max), drawn with rejection of repeats, and how many draws that took
(MXNet 1.x's sampler behind sampled softmax: P(c) = log((c + 2) / (c + 1)) / log(range_max + 1))."""
from __future__ import annotations

import numpy as np

from ..base import ShapeError
from ._common import generator
from .registry import Attr, OpDef, register


def unique_log_uniform(gen: np.random.Generator, range_max: int, num_sampled: int):
    """(the first num_sampled distinct draws in draw order, the number of draws made)."""
    log_range = np.log(range_max + 1.0)
    draws = np.empty(0, dtype=np.int64)
    while True:
        # draw in blocks; the sample is the sequence of first occurrences, so only the draw at
        # which the num_sampled-th distinct value first appears matters for the count
        block = (np.exp(gen.random(max(2 * num_sampled, 1024)) * log_range) - 1.0).astype(np.int64)
        draws = np.concatenate([draws, np.minimum(block, range_max - 1)])
        _, first = np.unique(draws, return_index=True)
        if first.size >= num_sampled:
            order = np.sort(first)[:num_sampled]
            return draws[order], int(order[-1]) + 1 if num_sampled else 0


def _infer_shape(attrs, in_shapes):
    shape = tuple(attrs["shape"])
    if len(shape) != 2 or any(d is None or d < 0 for d in shape):
        raise ShapeError(f"_sample_unique_zipfian: shape must be (batch_size, num_sampled), got {shape}")
    if shape[1] > attrs["range_max"]:
        raise ShapeError(f"_sample_unique_zipfian: cannot draw {shape[1]} distinct classes from "
                         f"range_max={attrs['range_max']}")
    return [], [shape, (shape[0],)]


def _kernel(ctx, attrs, inputs, outputs, aux):
    gen = generator("_sample_unique_zipfian", ctx)
    samples, tries = outputs
    rows, counts = [], []
    for _ in range(samples.shape[0]):
        row, n = unique_log_uniform(gen, attrs["range_max"], samples.shape[1])
        rows.append(row)
        counts.append(n)
    values = np.stack(rows) if rows else np.empty(samples.shape, np.int64)
    samples[...] = ctx.xp.asarray(values)
    tries[...] = np.asarray(counts, np.int64) if ctx.xp is np else ctx.xp.asarray(counts)


register(OpDef(
    name="_sample_unique_zipfian",
    attrs={"range_max": Attr("int", doc="classes are drawn from [0, range_max)"),
           "shape": Attr("shape", (), doc="(batch_size, num_sampled)")},
    inputs=[], outputs=["samples", "num_tries"], infer_shape=_infer_shape,
    infer_type=lambda a, d: ([], [np.dtype(np.int64), np.dtype(np.int64)]),
    kernels={"any": _kernel}, resources=("rng",),
    doc="Distinct log-uniform samples per row and the number of draws each row took."))
