"""BatchNorm_v1 (MXNet's legacy name) is BatchNorm: same outputs and gradients."""
import numpy as np

import ember as mx


def test_batchnorm_v1_matches_batchnorm_and_numpy():
    x = np.random.default_rng(0).normal(size=(4, 3, 2, 2)).astype(np.float32)
    outs = []
    for op in (mx.nd.BatchNorm_v1, mx.nd.BatchNorm):
        data = mx.nd.array(x)
        data.attach_grad()
        with mx.autograd.record():
            y = op(data, mx.nd.ones((3,)) * 2, mx.nd.zeros((3,)), mx.nd.zeros((3,)), mx.nd.ones((3,)),
                   fix_gamma=False, eps=1e-3)
        y.backward(mx.nd.array(np.arange(48, dtype=np.float32).reshape(x.shape)))
        outs.append((y.asnumpy(), data.grad.asnumpy()))
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(outs[0][0], 2 * (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert mx.sym.BatchNorm_v1(mx.sym.var("d"), name="bn").list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
