"""The NN operators in symbolic graphs: parameter shapes inferred for simple_bind, forward/backward
through the executor equal to the registry kernels."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import analytic_grads, run_op  # noqa: E402

import ember as mx  # noqa: E402

rng = np.random.default_rng(12)


def test_simple_bind_infers_every_parameter_shape():
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=6, name="conv")
    net = mx.sym.BatchNorm(net, name="bn")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max")
    net = mx.sym.FullyConnected(net, num_hidden=5, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    args, outs, aux = net.infer_shape(data=(4, 2, 8, 8))
    shapes = dict(zip(net.list_arguments(), args))
    assert shapes == {"data": (4, 2, 8, 8), "conv_weight": (6, 2, 3, 3), "conv_bias": (6,), "bn_gamma": (6,),
                      "bn_beta": (6,), "fc_weight": (5, 54), "fc_bias": (5,), "softmax_label": (4,)}
    assert dict(zip(net.list_auxiliary_states(), aux)) == {"bn_moving_mean": (6,), "bn_moving_var": (6,)}
    assert outs == [(4, 5)]


def test_executor_forward_backward_matches_registry():
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=3, pad=(1, 1), no_bias=True, name="conv")
    act = mx.sym.LeakyReLU(conv, act_type="elu", slope=0.5)
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(act, num_hidden=2, no_bias=True, name="fc"),
                                        name="lro")
    ex = net.simple_bind(mx.cpu(), data=(2, 2, 4, 4))
    x = rng.standard_normal((2, 2, 4, 4)).astype(np.float32)
    wc = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    wf = rng.standard_normal((2, 48)).astype(np.float32)
    label = rng.standard_normal((2, 2)).astype(np.float32)
    for name, value in (("data", x), ("conv_weight", wc), ("fc_weight", wf), ("lro_label", label)):
        ex.arg_dict[name][:] = value
    ex.forward(is_train=True)
    ex.backward()
    c = run_op("Convolution", [x, wc], dict(kernel=(3, 3), num_filter=3, pad=(1, 1), no_bias=True))[0]
    a = run_op("LeakyReLU", [c], dict(act_type="elu", slope=0.5))[0]
    f = run_op("FullyConnected", [a, wf], dict(num_hidden=2, no_bias=True))[0]
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), f, rtol=1e-5, atol=1e-6)
    g_f = analytic_grads("FullyConnected", [a, wf], dict(num_hidden=2, no_bias=True), [(f - label) / 2])
    g_a = analytic_grads("LeakyReLU", [c], dict(act_type="elu", slope=0.5), [g_f[0]])
    g_c = analytic_grads("Convolution", [x, wc], dict(kernel=(3, 3), num_filter=3, pad=(1, 1), no_bias=True),
                         [g_a[0]])
    np.testing.assert_allclose(ex.grad_dict["fc_weight"].asnumpy(), g_f[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ex.grad_dict["conv_weight"].asnumpy(), g_c[1], rtol=1e-4, atol=1e-5)


def test_embedding_and_rnn_shapes_inferred():
    data = mx.sym.Variable("data")
    emb = mx.sym.Embedding(data, input_dim=20, output_dim=6, name="emb")
    rnn = mx.sym.RNN(emb, state_size=4, num_layers=2, mode="lstm", bidirectional=True, name="rnn")
    args, outs, _ = rnn.infer_shape(data=(5, 3))
    shapes = dict(zip(rnn.list_arguments(), args))
    assert shapes["emb_weight"] == (20, 6)
    assert shapes["rnn_state"] == shapes["rnn_state_cell"] == (4, 3, 4)
    assert shapes["rnn_parameters"] == (2 * (16 * 10 + 32) + 2 * (16 * 12 + 32),)
    assert outs == [(5, 3, 8)]
