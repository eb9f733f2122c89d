"""transpose infers its input's shape from a known output (MXNet's backward shape inference)."""
import pytest

import ember as mx


@pytest.mark.parametrize("a,b", [([2, 3], [-1, -1]), ([2, -1], [3, -1])])
def test_unknown_input_of_transpose_is_filled_from_its_consumer(a, b):
    y = mx.sym.ones(shape=a) + mx.sym.transpose(mx.sym.ones(shape=b))
    out = y.bind(mx.cpu(), args={}).forward()[0]
    assert out.shape == (2, 3) and float(out.asnumpy().min()) == 2.0


def test_axes_are_inverted():
    x = mx.sym.var("x")
    y = mx.sym.transpose(x, axes=(1, 2, 0)) + mx.sym.var("z")
    args, _, _ = y.infer_shape_partial(z=(3, 4, 5))
    assert args[0] == (5, 3, 4)
