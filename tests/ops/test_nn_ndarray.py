"""The NN operators through mx.nd and mx.autograd (the imperative path), not just the registry."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import analytic_grads  # noqa: E402

import ember as mx  # noqa: E402

rng = np.random.default_rng(10)


def _arr(shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_conv_pool_fc_chain_gradients_match_registry():
    xs, ws, fw = _arr((2, 3, 6, 6)), _arr((4, 3, 3, 3)), _arr((5, 16))
    x, w, f = (mx.nd.array(a) for a in (xs, ws, fw))
    for v in (x, w, f):
        v.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=4, no_bias=True, pad=(1, 1))
        z = mx.nd.Pooling(y, kernel=(3, 3), stride=(3, 3), pool_type="avg")
        out = mx.nd.FullyConnected(z, f, num_hidden=5, no_bias=True)
    head = _arr((2, 5))
    out.backward(mx.nd.array(head))
    # the same chain through the registry's backward ops
    from _nn_gradcheck import run_op
    y_np = run_op("Convolution", [xs, ws], dict(kernel=(3, 3), num_filter=4, no_bias=True, pad=(1, 1)))[0]
    z_np = run_op("Pooling", [y_np], dict(kernel=(3, 3), stride=(3, 3), pool_type="avg"))[0]
    g_fc = analytic_grads("FullyConnected", [z_np, fw], dict(num_hidden=5, no_bias=True), [head])
    g_pool = analytic_grads("Pooling", [y_np], dict(kernel=(3, 3), stride=(3, 3), pool_type="avg"), [g_fc[0]])
    g_conv = analytic_grads("Convolution", [xs, ws], dict(kernel=(3, 3), num_filter=4, no_bias=True, pad=(1, 1)),
                            [g_pool[0]])
    np.testing.assert_allclose(f.grad.asnumpy(), g_fc[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.grad.asnumpy(), g_conv[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), g_conv[0], rtol=1e-4, atol=1e-5)


def test_batchnorm_updates_moving_stats_only_when_training():
    xs = _arr((4, 3, 2, 2))
    x, g, b = mx.nd.array(xs), mx.nd.ones((3,)), mx.nd.zeros((3,))
    mm, mv = mx.nd.zeros((3,)), mx.nd.ones((3,))
    out = mx.nd.BatchNorm(x, g, b, mm, mv)  # inference: moving stats untouched
    np.testing.assert_array_equal(mm.asnumpy(), 0)
    np.testing.assert_allclose(out.asnumpy(), xs / np.sqrt(1 + 1e-3), rtol=1e-5)
    with mx.autograd.record():
        mx.nd.BatchNorm(x, g, b, mm, mv, momentum=0.5)
    np.testing.assert_allclose(mm.asnumpy(), 0.5 * xs.mean(axis=(0, 2, 3)), rtol=1e-5)
    np.testing.assert_allclose(mv.asnumpy(), 0.5 + 0.5 * xs.var(axis=(0, 2, 3)), rtol=1e-5)


def test_dropout_train_vs_predict_and_gradient_mask():
    x = mx.nd.array(np.ones((50, 40), np.float32))
    np.testing.assert_array_equal(mx.nd.Dropout(x, p=0.5).asnumpy(), 1)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=0.5)
    y.backward(mx.nd.ones((50, 40)))
    yv = y.asnumpy()
    assert 0.4 < (yv == 0).mean() < 0.6
    np.testing.assert_array_equal(x.grad.asnumpy(), yv)  # x = 1, so output == mask == gradient


def test_softmax_output_backward_ignores_head():
    d = mx.nd.array(_arr((3, 4)))
    d.attach_grad()
    with mx.autograd.record():
        s = mx.nd.SoftmaxOutput(d, mx.nd.array([0, 3, 1]))
    s.backward(mx.nd.array(_arr((3, 4))))
    p = s.asnumpy()
    np.testing.assert_allclose(d.grad.asnumpy(), p - np.eye(4)[[0, 3, 1]], rtol=1e-5, atol=1e-6)


def test_rnn_lstm_state_outputs_through_nd():
    t, n, i, h = 3, 2, 4, 5
    size = 4 * h * (i + h) + 8 * h
    res = mx.nd.RNN(mx.nd.array(_arr((t, n, i))), mx.nd.array(_arr((size,)) * 0.1), mx.nd.zeros((1, n, h)),
                    mx.nd.zeros((1, n, h)), state_size=h, num_layers=1, mode="lstm", state_outputs=True)
    assert [r.shape for r in res] == [(t, n, h), (1, n, h), (1, n, h)]
    np.testing.assert_allclose(res[0].asnumpy()[-1], res[1].asnumpy()[0], rtol=1e-6)
