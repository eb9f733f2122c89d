"""_sample_unique_zipfian: distinct log-uniform classes per row and the draws that took."""
import numpy as np
import pytest

import ember as mx
from ember.base import ShapeError
from ember.ops.random_unique import unique_log_uniform


def _reference(seed, range_max, n):
    """Rejection sampling one draw at a time, as the operator's definition reads."""
    gen = np.random.default_rng(seed)
    seen, out, tries = set(), [], 0
    while len(out) < n:
        v = min(int(np.exp(gen.random() * np.log(range_max + 1.0)) - 1.0), range_max - 1)
        tries += 1
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out, tries


@pytest.mark.parametrize("range_max,n", [(50, 10), (1000, 300), (20, 20)])
def test_block_sampler_equals_one_draw_at_a_time(range_max, n):
    got, tries = unique_log_uniform(np.random.default_rng(7), range_max, n)
    want, want_tries = _reference(7, range_max, n)
    assert got.tolist() == want and tries == want_tries


def test_operator_rows_are_distinct_and_follow_the_log_uniform_law():
    mx.random.seed(3)
    classes, tries = mx.nd._internal._sample_unique_zipfian(10, shape=(2000, 1))
    assert classes.shape == (2000, 1) and classes.dtype == np.int64 and tries.dtype == np.int64
    assert (tries.asnumpy() == 1).all()  # one draw always gives one new class
    counts = np.bincount(classes.asnumpy().ravel(), minlength=10) / 2000.0
    c = np.arange(10)
    expected = np.log((c + 2.0) / (c + 1.0)) / np.log(11.0)
    np.testing.assert_allclose(counts, expected, atol=0.04)
    rows, _ = mx.nd._internal._sample_unique_zipfian(100, shape=(5, 60))
    assert all(np.unique(r).size == 60 for r in rows.asnumpy())


def test_bad_shapes_are_shape_errors():
    with pytest.raises(ShapeError, match="batch_size, num_sampled"):
        mx.nd._internal._sample_unique_zipfian(10, shape=(3,))
    with pytest.raises(ShapeError, match="distinct"):
        mx.nd._internal._sample_unique_zipfian(10, shape=(1, 11))
