"""NDArray._fresh_grad: set when backward writes a variable's gradient, cleared by its owner (gluon.Trainer)."""
from __future__ import annotations

import pytest

import ember as mx
from ember.base import MXNetError


def test_backward_sets_the_flag_of_variables_it_wrote_only():
    x, y, unused = mx.nd.ones(2), mx.nd.ones(2), mx.nd.ones(2)
    x.attach_grad()
    y.attach_grad(grad_req="null")
    unused.attach_grad()
    with mx.autograd.record():
        loss = (x * y).sum()
    assert not x._fresh_grad  # recording alone writes no gradient
    loss.backward()
    assert x._fresh_grad
    assert not y._fresh_grad  # grad_req 'null': nothing written
    assert not unused._fresh_grad  # not reached by this backward


def test_clearing_the_flag_and_the_next_backward_setting_it_again():
    x = mx.nd.ones(3)
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with mx.autograd.record():
            loss = (x * x).sum()
        loss.backward()
        assert x._fresh_grad
        x._fresh_grad = False
        assert not x._fresh_grad
    assert x.grad.asnumpy().tolist() == [4.0, 4.0, 4.0]


def test_autograd_grad_and_a_new_attach_grad_leave_the_flag_unset():
    x = mx.nd.ones(2)
    x.attach_grad()
    with mx.autograd.record():
        loss = (x * 2).sum()
    mx.autograd.grad(loss, [x])  # returns the gradient, writes no .grad
    assert not x._fresh_grad
    with mx.autograd.record():
        loss = (x * 2).sum()
    loss.backward()
    x.attach_grad()  # a new variable: a new, clear state
    assert not x._fresh_grad


def test_arrays_that_are_not_variables_have_no_gradient_state():
    a = mx.nd.ones(2)
    assert a._fresh_grad is False
    with pytest.raises(MXNetError, match="not been marked as a variable"):
        a._fresh_grad = True


@pytest.mark.parametrize("grad_req,expected", [("write", 0.0), ("add", 5.0)])
def test_a_variable_whose_gradient_is_blocked_gets_a_zero_gradient_as_in_mxnet(grad_req, expected):
    w = mx.nd.ones(3)
    w.attach_grad(grad_req=grad_req)
    w.grad[:] = 5
    with mx.autograd.record():
        loss = (mx.nd.BlockGrad(w) * 2).sum()
    loss.backward()
    assert w._fresh_grad  # written (as zeros): a Trainer treats it as fresh, not stale
    assert w.grad.asnumpy().tolist() == [expected] * 3
