"""topk's partial selection gives exactly the full stable sort's first k (ties, NaN, integer dtypes)."""
import numpy as np
import pytest

from ember.ops.sort import _first_k, _order

from ._gradcheck import run


@pytest.mark.parametrize("seed", range(6))
def test_first_k_equals_the_stable_sort_prefix(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        shape = tuple(int(d) for d in rng.integers(1, 50, size=rng.integers(1, 4)))
        dtype = [np.float32, np.float64, np.int32, np.uint8][seed % 4]
        x = (rng.integers(0, 4, size=shape) if seed % 2 else rng.standard_normal(shape) * 3).astype(dtype)
        axis = int(rng.integers(0, len(shape)))
        k = int(rng.integers(1, shape[axis] + 1))
        for ascend in (True, False):
            want = np.take(_order(np, x, axis, ascend), np.arange(k), axis=axis)
            np.testing.assert_array_equal(_first_k(np, x, axis, ascend, k), want)


def test_topk_of_a_long_axis_with_ties_and_nan():
    x = np.zeros((2, 1000), dtype=np.float32)
    x[0, [5, 700, 900]] = 3.0
    x[1, 10] = np.nan
    x[1, [20, 30]] = 2.0
    idx = run("topk", [x], {"k": 3, "axis": 1})
    np.testing.assert_array_equal(idx[0], [5, 700, 900])
    # descending order with NaN follows the full sort (numpy puts NaN last when ascending)
    want = np.take(_order(np, x[1:], 1, False), np.arange(3), axis=1)
    np.testing.assert_array_equal(idx[1:], want)
    vals = run("topk", [np.arange(1000.0)[None]], {"k": 2, "ret_typ": "value", "is_ascend": True})
    np.testing.assert_array_equal(vals, [[0.0, 1.0]])
