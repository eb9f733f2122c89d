"""SGD with rescale_grad = 1/batch_size: the update a Trainer step makes is bitwise the formula
MXNet's kernel computes, w - lr * (rescale_grad * g) (in float32, two roundings), whether the
kernel folds a power-of-two rescale into the learning rate or not."""
import numpy as np
import pytest

import ember as mx


def _reference(w, g, lr, wd, rescale):
    step = np.multiply(np.multiply(g, np.float32(rescale)), np.float32(lr))
    if wd:
        return np.subtract(np.multiply(w, np.float32(1 - lr * wd)), step)
    return np.subtract(w, step)


@pytest.mark.parametrize("size", [1000, 200_000])  # whole-array and chunked kernels
@pytest.mark.parametrize("batch", [1, 8, 100, 128, 256])
def test_sgd_update_is_bitwise_the_two_rounding_formula(size, batch):
    rng = np.random.RandomState(batch)
    w = rng.randn(size).astype(np.float32)
    g = (rng.randn(size) * np.exp(rng.uniform(-20, 20, size))).astype(np.float32)
    for lr, wd in ((0.01, 0.0), (0.123457, 0.0), (0.05, 1e-4)):
        want = _reference(w, g, lr, wd, 1.0 / batch)
        got = mx.nd.sgd_update(mx.nd.array(w), mx.nd.array(g), lr=lr, wd=wd, rescale_grad=1.0 / batch).asnumpy()
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
        outs = mx.nd.multi_sgd_update(mx.nd.array(w), mx.nd.array(g), mx.nd.array(w[:10]), mx.nd.array(g[:10]),
                                      lrs=(lr, lr), wds=(wd, wd), rescale_grad=1.0 / batch, num_weights=2)
        np.testing.assert_array_equal(outs[0].asnumpy().view(np.int32), want.view(np.int32))
        np.testing.assert_array_equal(outs[1].asnumpy().view(np.int32), want[:10].view(np.int32))


def test_trainer_step_matches_the_formula_bitwise():
    rng = np.random.RandomState(7)
    p = mx.gluon.Parameter("w", shape=(300, 300))
    p.initialize(mx.init.Constant(0.0))
    w0 = rng.randn(300, 300).astype(np.float32)
    g0 = rng.randn(300, 300).astype(np.float32)
    p.set_data(mx.nd.array(w0))
    with mx.autograd.record():
        y = p.data() * mx.nd.array(g0)
    y.backward()  # the gradient is g0 exactly
    trainer = mx.gluon.Trainer([p], "sgd", {"learning_rate": 0.03})
    trainer.step(64)
    want = _reference(w0, g0, 0.03, 0.0, 1.0 / 64)
    np.testing.assert_array_equal(p.data().asnumpy().view(np.int32), want.view(np.int32))
