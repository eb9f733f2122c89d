"""NDArray / autograd behaviours MXNet 1.9.1's own tests rely on."""
import numpy as np
import pytest

import ember as mx
from ember.autograd import AutogradError


@pytest.mark.parametrize("make, shape", [
    (lambda t: t.flatten(inplace=True), (2, 12)),
    (lambda t: t.reshape(2, 1, 3, 4).squeeze(axis=1, inplace=True), (2, 3, 4)),
    (lambda t: t.expand_dims(axis=1, inplace=True), (2, 1, 3, 4)),
    (lambda t: t.expand_dims(axis=-1, inplace=True), (2, 3, 4, 1)),
])
def test_inplace_shape_methods_return_views(make, shape):
    base = mx.nd.array(np.arange(24.0).reshape(2, 3, 4))
    view = make(base)
    assert view.shape == shape
    np.testing.assert_array_equal(view.asnumpy().ravel(), np.arange(24.0))
    view[:] = -1  # writes through to the base array
    assert (base.asnumpy() == -1).all()
    copy = base.flatten()  # inplace=False (default) copies
    copy[:] = 5
    assert (base.asnumpy() == -1).all()


def test_inplace_squeeze_checks_the_axis_and_squeezes_all_by_default():
    t = mx.nd.ones((2, 1, 4, 1))
    assert t.squeeze(inplace=True).shape == (2, 4)
    with pytest.raises(mx.MXNetError, match="length is 2"):
        t.squeeze(axis=0, inplace=True)


def test_get_symbol_rebuilds_the_recorded_computation():
    x = mx.nd.array([1.5])
    x.attach_grad()
    with mx.autograd.record():
        y = x * x + 2 * x - 1
    sym = mx.autograd.get_symbol(y)
    assert sym.list_arguments() == ["var0"]
    np.testing.assert_allclose(sym.eval(var0=mx.nd.array([3.0]))[0].asnumpy(), [3 * 3 + 2 * 3 - 1])
    z = mx.nd.array([2.0])
    z.attach_grad()
    with mx.autograd.record():
        y = x * x + 2 * z - 1
    assert len(mx.autograd.get_symbol(y).list_arguments()) == 2
    # multi-output ops, constants (arrays without attach_grad) become variables too
    rs = np.random.RandomState(0)
    a, c = mx.nd.array(rs.rand(2, 3)), mx.nd.array(rs.rand(3, 4))
    a.attach_grad()
    with mx.autograd.record():
        parts = mx.nd.split(mx.nd.dot(a, c), num_outputs=2, axis=1)
        r = mx.nd.relu(parts[1] - 0.5).sum(axis=1)
    sym = mx.autograd.get_symbol(r)
    assert sym.list_arguments() == ["var0", "var1"]
    np.testing.assert_allclose(sym.eval(var0=a, var1=c)[0].asnumpy(), r.asnumpy(), rtol=1e-6)
    with pytest.raises(AutogradError, match="not part of a computation graph"):
        mx.autograd.get_symbol(mx.nd.ones(1))


@pytest.mark.parametrize("index", [1, slice(1, 2), (0, 1), [0, 2], (slice(None), slice(None, None, 2))])
def test_assigning_a_recorded_value_into_part_of_an_array_raises(index):
    x = mx.nd.zeros((3, 4))
    y = mx.nd.random.uniform(shape=x[index].shape)
    y.attach_grad()
    with pytest.raises(mx.MXNetError, match=r"Inplace operations \(\+=, -=, x\[:\]=, etc\) are not supported "
                                            "when recording with"):
        with mx.autograd.record():
            x[index] = y


@pytest.mark.parametrize("index", [Ellipsis, None, slice(None)])
def test_assigning_a_recorded_value_to_the_whole_array_is_recorded(index):
    x = mx.nd.zeros((3, 4))
    y = mx.nd.array(np.arange(12.0).reshape(3, 4))
    y.attach_grad()
    with mx.autograd.record():
        x[index] = y
        z = (x * x).sum()
    z.backward()
    np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
    np.testing.assert_allclose(y.grad.asnumpy(), 2 * y.asnumpy())  # the gradient flows through the copy


@pytest.mark.parametrize("index", [Ellipsis, None, (slice(None), None)])
def test_a_recorded_lower_rank_value_broadcasts_over_the_whole_array(index):
    x = mx.nd.zeros((3, 4))
    y = mx.nd.array(np.arange(4.0))
    y.attach_grad()
    with mx.autograd.record():
        x[index] = y
        z = (x * x).sum()
    z.backward()
    np.testing.assert_array_equal(x.asnumpy(), np.tile(np.arange(4.0), (3, 1)))
    np.testing.assert_allclose(y.grad.asnumpy(), 2 * 3 * np.arange(4.0))


def test_assignments_that_record_nothing_still_work_while_recording():
    x = mx.nd.zeros((3, 4))
    with mx.autograd.record():
        x[1] = 2                       # no array in the graph: a plain write, as MXNet
        x[2] = mx.nd.ones(4)
    np.testing.assert_array_equal(x.asnumpy()[1:], [[2] * 4, [1] * 4])
    w = mx.nd.ones((2, 2))
    w.attach_grad()
    with pytest.raises(mx.MXNetError):  # the target itself is in the graph
        with mx.autograd.record():
            w[0] = 3


@pytest.mark.parametrize("make", [lambda s: mx.nd.zeros(s), lambda s: mx.nd.ones(s), lambda s: mx.nd.full(s, 2.0)])
@pytest.mark.parametrize("shape", [(), (0, 3), (2, 0, 4)])
def test_zeros_ones_full_read_0d_and_zero_size_shapes_as_unknown_outside_np_shape(make, shape):
    # MXNet 1.x legacy shape semantics: () and 0 mean "unknown", so these creation calls fail
    with pytest.raises(mx.MXNetError, match="unknown dimensions"):
        make(shape)
    with mx.np_shape():
        arr = make(shape)
        assert arr.shape == shape
    # arrays of such shapes still come from data, and *_like / out= keep working
    data = mx.nd.array(np.zeros(shape, np.float32))
    assert data.shape == shape and mx.nd.zeros_like(data).shape == shape and mx.nd.ones_like(data).shape == shape
    mx.nd.zeros(shape, out=data)
