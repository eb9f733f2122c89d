"""MXNet 1.x's input checks of tile and depth_to_space/space_to_depth (0 is an unknown size)."""
import numpy as np
import pytest

import ember as mx
from ember.base import MXNetError


def test_tile_rejects_zero_reps_without_numpy_shape_semantics():
    data = mx.nd.arange(16).reshape((4, 4))
    for reps in [(1, 2, -3), (1, 0, 3)]:
        with pytest.raises(MXNetError, match="tile: reps"):
            mx.nd.tile(data, reps).wait_to_read()
    with mx.np_shape(True):
        assert mx.nd.tile(mx.nd.ones((2, 2)), (1, 0)).shape == (2, 0)


@pytest.mark.parametrize("op,shape", [("depth_to_space", (1, 4, 0, 3)), ("space_to_depth", (1, 0, 2, 4))])
def test_depth_space_reject_zero_dimensions(op, shape):
    with pytest.raises(MXNetError, match="every dimension"):
        getattr(mx.nd, op)(mx.nd.array(np.ones(shape)), 2).wait_to_read()


def test_depth_space_round_trip_still_works():
    x = mx.nd.array(np.arange(32.0).reshape(1, 8, 2, 2))
    np.testing.assert_array_equal(mx.nd.space_to_depth(mx.nd.depth_to_space(x, 2), 2).asnumpy(), x.asnumpy())
