"""Pooling with pooling_convention='same' (MXNet 1.9.1: 1-D max pooling, ceil(n / stride) outputs)."""
import math

import numpy as np
import pytest

import ember as mx
from ember.base import MXNetError


@pytest.mark.parametrize("n,k,s", [(10, 2, 2), (11, 3, 2), (11, 4, 3), (7, 5, 1)])
def test_same_max_pooling_shape_and_values(n, k, s):
    x = np.random.default_rng(n).standard_normal((2, 3, n)).astype(np.float32)
    out = mx.nd.Pooling(mx.nd.array(x), kernel=(k,), stride=(s,), pool_type="max",
                        pooling_convention="same").asnumpy()
    o = math.ceil(n / s)
    assert out.shape == (2, 3, o)
    total = max(0, (o - 1) * s + k - n)
    padded = np.pad(x, [(0, 0), (0, 0), (total // 2, total - total // 2)], constant_values=-np.inf)
    want = np.stack([padded[..., i * s:i * s + k].max(axis=-1) for i in range(o)], axis=-1)
    np.testing.assert_array_equal(out, want)


def test_same_convention_limits():
    x = mx.nd.ones((1, 1, 10))
    # a longer pad is read from its leading entries, as MXNet does
    assert mx.nd.Pooling(x, kernel=(2,), stride=(2,), pad=(0, 0, 0), pool_type="max",
                         pooling_convention="same").shape == (1, 1, 5)
    with pytest.raises(MXNetError, match="pad must be 0"):
        mx.nd.Pooling(x, kernel=(2,), stride=(2,), pad=(2,), pool_type="max", pooling_convention="same")
    with pytest.raises(MXNetError, match="1-D max pooling only"):
        mx.nd.Pooling(mx.nd.ones((1, 1, 4, 4)), kernel=(2, 2), pool_type="max", pooling_convention="same")
    with pytest.raises(MXNetError, match="1-D max pooling only"):
        mx.nd.Pooling(x, kernel=(2,), pool_type="avg", pooling_convention="same")
