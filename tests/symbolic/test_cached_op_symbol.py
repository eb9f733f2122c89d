"""mx.sym._internal._CachedOp(*args, subgraph=json): a graph given as JSON called as one node, as MXNet's
test_subgraph builds it; its auxiliary states (BatchNorm's statistics) are the node's aux inputs, so the
arguments, aux states, values, gradients and moving statistics equal the original graph's."""
import numpy as np
import pytest

import ember as mx
from ember.base import MXNetError


def _net():
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), name="conv")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn")
    return mx.sym.FullyConnected(mx.sym.relu(x), num_hidden=3, name="fc")


def _call(orig):
    inputs = [mx.sym.Variable(n) for n in orig.list_inputs()]
    return mx.sym._internal._CachedOp(*inputs, subgraph=orig.tojson())


def _bind(sym, values, aux):
    args = {k: mx.nd.array(v) for k, v in values.items()}
    grads = {k: mx.nd.zeros(v.shape) for k, v in values.items()}
    auxs = {k: mx.nd.array(v) for k, v in aux.items()}
    return sym.bind(mx.cpu(), args=args, args_grad=grads, aux_states=auxs)


def test_arguments_and_aux_states_match_the_graph():
    orig = _net()
    sub = _call(orig)
    assert sub.list_arguments() == orig.list_arguments()
    assert sub.list_auxiliary_states() == orig.list_auxiliary_states()
    assert sub.infer_shape(data=(2, 3, 6, 6)) == orig.infer_shape(data=(2, 3, 6, 6))


def test_values_gradients_and_statistics_equal_the_graph():
    rng = np.random.RandomState(0)
    orig = _net()
    sub = _call(orig)
    shapes, _, aux_shapes = orig.infer_shape(data=(2, 3, 6, 6))
    values = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in zip(orig.list_arguments(), shapes)}
    aux = {n: (np.ones(s) if "var" in n else np.zeros(s)).astype(np.float32)
           for n, s in zip(orig.list_auxiliary_states(), aux_shapes)}
    e1, e2 = _bind(orig, values, aux), _bind(sub, values, aux)
    head = mx.nd.array(rng.uniform(-1, 1, (2, 3)).astype(np.float32))
    for e in (e1, e2):
        e.forward(is_train=True)
        e.backward([head])
    np.testing.assert_allclose(e2.outputs[0].asnumpy(), e1.outputs[0].asnumpy(), rtol=1e-5, atol=1e-6)
    for n in orig.list_arguments():
        np.testing.assert_allclose(e2.grad_dict[n].asnumpy(), e1.grad_dict[n].asnumpy(), rtol=1e-4, atol=1e-5)
    for n in orig.list_auxiliary_states():  # the training forward moved the statistics in both
        np.testing.assert_allclose(e2.aux_dict[n].asnumpy(), e1.aux_dict[n].asnumpy(), rtol=1e-5, atol=1e-6)
        assert not np.allclose(e2.aux_dict[n].asnumpy(), aux[n])


def test_json_round_trip_keeps_the_aux_inputs():
    sub = _call(_net())
    back = mx.sym.load_json(sub.tojson())
    assert back.list_arguments() == sub.list_arguments()
    assert back.list_auxiliary_states() == sub.list_auxiliary_states()


def test_bad_calls_are_refused():
    orig = _net()
    with pytest.raises(MXNetError, match="takes 9 symbols"):
        mx.sym._internal._CachedOp(mx.sym.Variable("data"), subgraph=orig.tojson())
    with pytest.raises(MXNetError, match="unknown attributes"):
        mx.sym._internal._CachedOp(*[mx.sym.Variable(n) for n in orig.list_inputs()], subgraph=orig.tojson(),
                                   bogus=1)
    with pytest.raises(MXNetError, match="JSON string"):
        mx.sym._internal._CachedOp(mx.sym.Variable("data"), subgraph=orig)
