"""IdentityAttachKLSparseReg: a bound symbol against MXNet 1.9.1 (fixtures from
tests/ops/fixtures/make_kl_sparse_reg_fixtures.py: output, data gradient and the moving average its backward
updates, two steps); the same numbers through autograd (aux passed after the data) and a Module; the
forward alone leaves the moving average; clear errors."""
import os

import numpy as np
import pytest

import ember as mx
from ember import autograd
from ember.base import MXNetError

FIX = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "kl_sparse_reg.npz"))
ATTRS = dict(sparseness_target=0.2, penalty=0.01, momentum=0.8)


def test_bound_symbol_matches_mxnet():
    sym = mx.sym.IdentityAttachKLSparseReg(mx.sym.var("data"), name="reg", **ATTRS)
    assert sym.list_arguments() == ["data"] and sym.list_auxiliary_states() == ["reg_moving_avg"]
    exe = sym.simple_bind(mx.cpu(), data=(6, 5), grad_req="write")
    exe.aux_dict["reg_moving_avg"][:] = FIX["moving_init"]
    for step in range(2):
        exe.arg_dict["data"][:] = FIX["data"][step]
        exe.forward(is_train=True)
        np.testing.assert_array_equal(exe.outputs[0].asnumpy(), FIX[f"out{step}"])
        exe.backward(mx.nd.array(FIX["heads"][step]))
        np.testing.assert_allclose(exe.aux_dict["reg_moving_avg"].asnumpy(), FIX[f"moving{step}"], rtol=1e-6)
        np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), FIX[f"grad{step}"], rtol=1e-5, atol=1e-7)


def test_autograd_updates_the_moving_average_in_backward_only():
    x = mx.nd.array(FIX["data"][0])
    moving = mx.nd.array(FIX["moving_init"])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.IdentityAttachKLSparseReg(x, moving, **ATTRS)
    np.testing.assert_array_equal(moving.asnumpy(), FIX["moving_init"])   # the forward leaves it
    np.testing.assert_array_equal(y.asnumpy(), FIX["data"][0])
    y.backward(mx.nd.array(FIX["heads"][0]))
    np.testing.assert_allclose(moving.asnumpy(), FIX["moving0"], rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), FIX["grad0"], rtol=1e-5, atol=1e-7)
    rho = FIX["moving0"].astype(np.float64)   # the formula, from the updated average
    want = FIX["heads"][0] + 0.01 * (-0.2 / rho + 0.8 / (1 - rho))
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-5)


def test_module_training_updates_the_aux_state():
    data = mx.sym.var("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=4, name="fc"), act_type="sigmoid")
    net = mx.sym.IdentityAttachKLSparseReg(net, name="reg", **ATTRS)
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(net, num_hidden=3, name="out"), name="lro")
    rs = np.random.RandomState(0)
    it = mx.io.NDArrayIter(rs.rand(8, 6).astype(np.float32), rs.rand(8, 3).astype(np.float32), batch_size=8,
                           label_name="lro_label")
    mod = mx.mod.Module(net, label_names=["lro_label"])
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier(), aux_params={"reg_moving_avg": mx.nd.full((4,), 0.5)})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    batch = next(iter(it))
    mod.forward(batch, is_train=True)
    hidden = mx.nd.sigmoid(mx.nd.FullyConnected(batch.data[0], *[mod.get_params()[0][k] for k in ("fc_weight", "fc_bias")],
                                                num_hidden=4)).asnumpy()
    mod.backward()
    mod.update()
    moving = mod.get_params()[1]["reg_moving_avg"].asnumpy()
    np.testing.assert_allclose(moving, 0.8 * 0.5 + 0.2 * hidden.mean(axis=0), rtol=1e-5)


@pytest.mark.parametrize("call, match", [
    (lambda: mx.nd.IdentityAttachKLSparseReg(mx.nd.ones((2, 3)), mx.nd.ones(3), sparseness_target=1.5),
     "sparseness_target"),
    (lambda: mx.nd.IdentityAttachKLSparseReg(mx.nd.ones((2, 3)), mx.nd.ones(3), momentum=-0.1), "momentum"),
    (lambda: mx.nd.IdentityAttachKLSparseReg(mx.nd.ones(3), mx.nd.ones(3)), "at least 2-D"),
    (lambda: mx.nd.IdentityAttachKLSparseReg(mx.nd.ones((2, 3)), mx.nd.ones(4)), "moving_avg"),
])
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(MXNetError, match=match):
        call().wait_to_read()


def test_more_than_two_dimensions_run_forward_only():
    x = mx.nd.ones((2, 3, 4))
    moving = mx.nd.full((3,), 0.5)
    x.attach_grad()
    with autograd.record():
        y = mx.nd.IdentityAttachKLSparseReg(x, moving)
    np.testing.assert_array_equal(y.asnumpy(), np.ones((2, 3, 4)))
    with pytest.raises(MXNetError, match="2-D data"):
        y.backward()
        x.grad.wait_to_read()
    np.testing.assert_array_equal(moving.asnumpy(), np.full(3, 0.5))
