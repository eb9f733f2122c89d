"""mx.optimizer: each optimizer and option against numpy references and MXNet 1.9.1's recorded steps."""
import os
import pickle
import zlib

import numpy as np
import pytest

import ember as mx
from ember import ndarray as nd
from ember import optimizer as opt
from optimizer_reference import run_reference

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "data", "models", "toolkit-optimizer-steps.npz")

# (optimizer name, ember/MXNet kwargs, reference kind, reference kwargs)
CASES = {
    "sgd_plain": ("sgd", dict(learning_rate=0.1), "sgd", dict(lr=0.1)),
    "sgd_mom_wd_clip": ("sgd", dict(learning_rate=0.05, momentum=0.9, wd=0.01, clip_gradient=0.5, rescale_grad=0.5),
                        "sgd", dict(lr=0.05, momentum=0.9, wd=0.01, clip_gradient=0.5, rescale_grad=0.5)),
    "adam": ("adam", dict(learning_rate=0.01, wd=0.001), "adam", dict(lr=0.01, wd=0.001)),
    "adam_clip": ("adam", dict(learning_rate=0.02, beta1=0.8, beta2=0.99, epsilon=1e-6, clip_gradient=0.3,
                               rescale_grad=2.0),
                  "adam", dict(lr=0.02, beta1=0.8, beta2=0.99, epsilon=1e-6, clip_gradient=0.3, rescale_grad=2.0)),
    "rmsprop": ("rmsprop", dict(learning_rate=0.01, gamma1=0.9, wd=0.01), "rmsprop", dict(lr=0.01, gamma1=0.9, wd=0.01)),
    "rmsprop_centered": ("rmsprop", dict(learning_rate=0.01, gamma1=0.95, gamma2=0.9, centered=True, clip_weights=0.8),
                         "rmsprop", dict(lr=0.01, gamma1=0.95, gamma2=0.9, centered=True, clip_weights=0.8)),
    "adagrad": ("adagrad", dict(learning_rate=0.1, wd=0.01, eps=1e-6), "adagrad", dict(lr=0.1, wd=0.01, eps=1e-6)),
}


def _run_ember(name, kwargs, w0, grads, index=0):
    updater = opt.get_updater(opt.create(name, **kwargs))
    w = nd.array(w0)
    out = []
    for g in grads:
        updater(index, nd.array(g), w)
        out.append(w.asnumpy().copy())
    return np.stack(out), updater


@pytest.fixture(scope="module")
def recorded():
    return np.load(FIXTURE)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_mxnet_recorded_steps(case, recorded):
    name, kwargs, _, _ = CASES[case]
    got, _ = _run_ember(name, kwargs, recorded["w0"], recorded["grads"])
    np.testing.assert_allclose(got, recorded[case], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_numpy_reference_on_random_data(case):
    name, kwargs, kind, ref_kwargs = CASES[case]
    rs = np.random.RandomState(zlib.crc32(case.encode()))
    w0 = rs.randn(5, 3).astype(np.float32)
    grads = (3 * rs.randn(6, 5, 3)).astype(np.float32)
    got, _ = _run_ember(name, kwargs, w0, grads)
    want = run_reference(kind, w0, grads, **ref_kwargs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_factor_scheduler_drives_sgd(recorded):
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5)
    with pytest.warns(UserWarning, match="overwritten"):
        sgd = opt.create("sgd", learning_rate=0.1, momentum=0.5, lr_scheduler=sched)
    updater = opt.get_updater(sgd)
    w = nd.array(recorded["w0"])
    for step, g in enumerate(recorded["grads"]):
        updater(0, nd.array(g), w)
    np.testing.assert_allclose(w.asnumpy(), recorded["sgd_factor_sched"][-1], rtol=1e-5, atol=1e-6)
    assert sgd.num_update == len(recorded["grads"])
    assert sgd.learning_rate == pytest.approx(0.025)


def test_wd_skips_biases_and_lr_mult_by_name():
    names = {0: "fc_weight", 1: "fc_bias"}
    sgd = opt.SGD(learning_rate=0.5, wd=0.1, param_idx2name=names)
    sgd.set_lr_mult({"fc_weight": 2.0})
    updater = opt.get_updater(sgd)
    w, b = nd.ones((2,)), nd.ones((2,))
    zero = nd.zeros((2,))
    updater([0, 1], [zero, zero], [w, b])
    # weight: lr 1.0, wd 0.1 -> 1 - 1.0*0.1; bias: no decay by default (name does not end in _weight/_gamma)
    np.testing.assert_allclose(w.asnumpy(), [0.9, 0.9], rtol=1e-6)
    np.testing.assert_allclose(b.asnumpy(), [1.0, 1.0], rtol=1e-6)
    sgd.set_wd_mult({"fc_bias": 1.0})
    updater(1, zero, b)
    np.testing.assert_allclose(b.asnumpy(), [0.95, 0.95], rtol=1e-6)


def test_update_counts_per_index():
    sgd = opt.SGD(learning_rate=0.1, begin_num_update=3)
    updater = opt.get_updater(sgd)
    w0, w1 = nd.zeros((1,)), nd.zeros((1,))
    updater(0, nd.ones((1,)), w0)
    updater(0, nd.ones((1,)), w0)
    updater(1, nd.ones((1,)), w1)
    assert sgd._index_update_count == {0: 5, 1: 4}
    assert sgd.num_update == 5


def test_updater_states_round_trip():
    rs = np.random.RandomState(3)
    w0, grads = rs.randn(4).astype(np.float32), rs.randn(4, 4).astype(np.float32)
    full, _ = _run_ember("adam", dict(learning_rate=0.01), w0, grads)
    first, updater = _run_ember("adam", dict(learning_rate=0.01), w0, grads[:2])
    blob = updater.get_states(dump_optimizer=True)
    resumed = opt.get_updater(opt.create("sgd"))  # replaced by the saved Adam
    resumed.set_states(blob)
    assert isinstance(resumed.optimizer, opt.Adam)
    w = nd.array(first[-1])
    for g in grads[2:]:
        resumed(0, nd.array(g), w)
    np.testing.assert_allclose(w.asnumpy(), full[-1], rtol=1e-6)
    plain = opt.get_updater(opt.create("adam"))
    plain.set_states(updater.get_states())
    assert set(plain.states) == {0}
    with pytest.raises(mx.base.FormatError, match="not ember optimizer states"):
        plain.set_states(pickle.dumps([1, 2]))  # a pickle is never loaded
    blob = updater.get_states()
    for bad in (blob[: len(blob) // 2], b"not a pickle"):
        with pytest.raises(mx.base.FormatError, match="not ember optimizer states"):
            plain.set_states(bad)


def test_create_register_and_errors():
    assert isinstance(opt.create("SGD"), opt.SGD)
    assert isinstance(mx.optimizer.Optimizer.create_optimizer("rmsprop"), opt.RMSProp)
    with pytest.raises(opt.OptimizerError, match="cannot find optimizer 'nope'"):
        opt.create("nope")

    @opt.register
    class HalfStep(opt.Optimizer):
        def update(self, index, weight, grad, state):
            self._update_count(index)
            weight[:] = weight - 0.5 * self._get_lr(index) * grad

    w = nd.ones((3,))
    opt.get_updater(opt.create("halfstep", learning_rate=1.0))(0, nd.ones((3,)), w)
    np.testing.assert_allclose(w.asnumpy(), 0.5)
    with pytest.raises(TypeError, match="Optimizer subclasses"):
        opt.register(int)
    with pytest.raises(ValueError, match="momentum"):
        opt.SGD(momentum=-1)
    with pytest.raises(ValueError, match="beta1"):
        opt.Adam(beta1=1.5)
    assert opt.SGD(multi_precision=True).multi_precision  # float32 master copies: test_optimizer_more.py
    updater = opt.get_updater(opt.SGD())
    with pytest.raises(ValueError, match="gradient shape"):
        updater(0, nd.ones((2,)), nd.ones((3,)))
    with pytest.raises(TypeError, match="must be NDArrays"):
        updater(0, np.ones(3), nd.ones((3,)))


def test_set_learning_rate():
    sgd = opt.SGD(learning_rate=0.2)
    sgd.set_learning_rate(0.3)
    assert sgd.learning_rate == 0.3
    sched = opt.create("sgd", lr_scheduler=mx.lr_scheduler.FactorScheduler(step=1, base_lr=0.2))
    assert sched.learning_rate == 0.2  # the scheduler's own base_lr when learning_rate is not given
    with pytest.raises(UserWarning, match="LRScheduler"):
        sched.set_learning_rate(0.1)


def test_symbol_lr_and_wd_mult_attributes():
    w = mx.sym.Variable("fc_weight", lr_mult=0.5, wd_mult=2.0)
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), weight=w, num_hidden=2, name="fc")
    sgd = opt.SGD(learning_rate=0.2, wd=0.1, sym=net, param_idx2name={0: "fc_weight", 1: "fc_bias"})
    assert sgd.lr_mult == {"fc_weight": 0.5}
    assert sgd.wd_mult == {"fc_weight": 2.0, "fc_bias": 0.0}
    weight = nd.ones((2, 3))
    opt.get_updater(sgd)(0, nd.ones((2, 3)), weight)
    # lr 0.2*0.5, wd 0.1*2: w = (1 - 0.1*0.2) * 1 - 0.1 * 1
    np.testing.assert_allclose(weight.asnumpy(), 1 - 0.1 * 0.2 - 0.1, rtol=1e-6)
