"""take's out-of-range error is an MXNetError (and an IndexError); max/min refuse zero-size axes."""
import numpy as np
import pytest

import ember as mx
from ember.base import IndexRangeError, MXNetError


def test_take_raise_mode_error_is_an_mxnet_error():
    a = mx.nd.array(np.arange(6.0).reshape(2, 3))
    with pytest.raises(MXNetError, match="index -3 is out of bounds"):
        mx.nd.take(a, mx.nd.array([-3]), mode="raise").asnumpy()
    assert issubclass(IndexRangeError, IndexError)
    np.testing.assert_array_equal(mx.nd.take(a, mx.nd.array([-3]), mode="wrap").asnumpy(), [[3, 4, 5]])


def test_max_min_of_a_zero_size_axis_is_an_error():
    with mx.np_shape(True):
        a = mx.nd.zeros((5, 0))
        for op in (mx.nd.max, mx.nd.min):
            with pytest.raises(MXNetError, match="zero-size axis"):
                op(a).wait_to_read()
            with pytest.raises(MXNetError, match="zero-size axis"):
                op(a, axis=1).wait_to_read()
        assert mx.nd.max(a, axis=0).shape == (0,)
        assert mx.nd.sum(a).asnumpy().tolist() == [0.0] or mx.nd.sum(a).shape == ()
