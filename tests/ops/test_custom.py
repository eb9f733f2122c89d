"""Custom operators in Python (mx.operator.CustomOp / CustomOpProp / register) through the registry op
`Custom`: imperative calls, executors and autograd, against numpy and finite differences."""
import json

import numpy as np
import pytest

import ember as mx
from ember import ops
from ember.base import MXNetError, OperatorError, ShapeError


# -- operators used by the tests ------------------------------------------------------------

class _Square(mx.operator.CustomOp):
    """out = x * x; aux[0] is set to 1 in forward and checked in backward."""

    def forward(self, is_train, req, in_data, out_data, aux):
        aux[0][:] = 1
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        if not (aux[0].asnumpy() == 1).all():
            raise AssertionError("aux state written by forward not seen by backward")
        self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])


@mx.operator.register("test_square")
class _SquareProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_auxiliary_states(self):
        return ["aux"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [in_shape[0]]

    def create_operator(self, ctx, shapes, dtypes):
        return _Square()


class _MulAdd(mx.operator.CustomOp):
    """Two outputs: lhs * rhs and lhs + scale * rhs (scale from the prop's string keyword)."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        lhs, rhs = in_data
        self.assign(out_data[0], req[0], lhs * rhs)
        self.assign(out_data[1], req[1], lhs + self.scale * rhs)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        lhs, rhs = in_data
        g_prod, g_sum = out_grad
        self.assign(in_grad[0], req[0], g_prod * rhs + g_sum)
        self.assign(in_grad[1], req[1], g_prod * lhs + self.scale * g_sum)


@mx.operator.register("test_muladd")
class _MulAddProp(mx.operator.CustomOpProp):
    seen_kwargs = []

    def __init__(self, scale="1"):
        super().__init__()
        _MulAddProp.seen_kwargs.append(scale)
        self.scale = float(scale)

    def list_arguments(self):
        return ["lhs", "rhs"]

    def list_outputs(self):
        return ["prod", "sum"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _MulAdd(self.scale)


class _Tanh(mx.operator.CustomOp):
    """tanh written with mx.nd ops, gradient from the output only (no top-grad-free shortcut)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        e = mx.nd.exp(-2 * in_data[0])
        self.assign(out_data[0], req[0], (1 - e) / (1 + e))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0]
        self.assign(in_grad[0], req[0], out_grad[0] * (1 - y * y))


@mx.operator.register("test_tanh")
class _TanhProp(mx.operator.CustomOpProp):
    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return list(out_grad) + list(out_data)  # the input is not needed

    def create_operator(self, ctx, shapes, dtypes):
        return _Tanh()


def _nd(a):
    return mx.nd.array(np.asarray(a, dtype=np.float32))


@pytest.fixture(autouse=True)
def _own_names():
    # auto-named nodes ('custom0', ...) come from a fresh NameManager: other tests' names stay as expected
    with mx.name.NameManager():
        yield


# -- imperative -------------------------------------------------------------------------------

def test_nd_custom_forward_matches_numpy_and_updates_aux():
    x = np.random.uniform(-1, 1, (4, 10)).astype(np.float32)
    aux = mx.nd.zeros((4, 10))
    y = mx.nd.Custom(_nd(x), aux, op_type="test_square")
    np.testing.assert_allclose(y.asnumpy(), x * x, rtol=1e-6)
    np.testing.assert_array_equal(aux.asnumpy(), np.ones((4, 10)))


def test_nd_custom_two_outputs_and_string_kwargs():
    _MulAddProp.seen_kwargs.clear()
    a, b = np.random.rand(3, 5).astype(np.float32), np.random.rand(3, 5).astype(np.float32)
    prod, total = mx.nd.Custom(_nd(a), _nd(b), op_type="test_muladd", scale=2.5)
    np.testing.assert_allclose(prod.asnumpy(), a * b, rtol=1e-6)
    np.testing.assert_allclose(total.asnumpy(), a + 2.5 * b, rtol=1e-6)
    # every keyword reaches the prop's constructor as a string, as in MXNet
    assert _MulAddProp.seen_kwargs and set(_MulAddProp.seen_kwargs) == {"2.5"}


def test_nd_custom_without_inputs_uses_prop_shape_and_type():
    class Ones(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], np.ones(out_data[0].shape, dtype=np.float64))

    @mx.operator.register("test_ones")
    class OnesProp(mx.operator.CustomOpProp):
        def __init__(self, length, depth):
            super().__init__()
            self.shape = (int(length), int(depth))

        def list_arguments(self):
            return []

        def infer_shape(self, in_shape):
            return [], [self.shape], []

        def infer_type(self, in_type):
            return [], [np.float64], []

        def create_operator(self, ctx, shapes, dtypes):
            return Ones()

    out = mx.nd.Custom(length=3, depth=4, op_type="test_ones")
    assert out.shape == (3, 4) and out.dtype == np.float64
    np.testing.assert_array_equal(out.asnumpy(), np.ones((3, 4)))


def test_create_operator_gets_context_shapes_and_mxnet_dtype_codes():
    seen = []

    class Copy(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0])

    @mx.operator.register("test_seen")
    class SeenProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            seen.append((ctx, shapes, dtypes))
            return Copy()

    x = mx.nd.array(np.arange(6).reshape(2, 3), dtype=np.float64)
    np.testing.assert_array_equal(mx.nd.Custom(x, op_type="test_seen").asnumpy(), x.asnumpy())
    assert seen == [(mx.cpu(0), [[2, 3]], [1])]  # float64 is MXNet's type code 1


def test_forward_runs_with_recording_off_and_the_train_flag():
    flags = []

    class Probe(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            flags.append((is_train, mx.autograd.is_recording(), mx.autograd.is_training()))
            self.assign(out_data[0], req[0], in_data[0] + 1)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0])

    @mx.operator.register("test_probe")
    class ProbeProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Probe()

    x = _nd([1.0, 2.0])
    mx.nd.Custom(x, op_type="test_probe").wait_to_read()
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="test_probe")
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [1.0, 1.0])  # waits for both ops
    assert flags == [(False, False, False), (True, False, True)]


# -- autograd ------------------------------------------------------------------------------------

def test_autograd_gradient_with_aux_matches_numpy():
    x = _nd(np.random.uniform(-1, 1, (4, 10)))
    aux = mx.nd.zeros((4, 10))
    x.attach_grad()
    head = _nd(np.random.rand(4, 10))
    with mx.autograd.record():
        y = mx.nd.Custom(x, aux, op_type="test_square")
    y.backward(head)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * x.asnumpy() * head.asnumpy(), rtol=1e-5)


def test_a_sparse_aux_state_is_written_back_and_backward_sees_the_forwards_values():
    # A sparse aux state reaches the kernel densified: a temporary whose memory the allocator hands
    # to later arrays before the backward runs (the bug: backward read that memory, not the aux).
    x = _nd(np.random.uniform(-1, 1, (4, 10)))
    aux = mx.nd.zeros((4, 10)).tostype("csr")
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, aux, op_type="test_square")
    # the forward's write reached the sparse aux state itself (MXNet's fallback copies it back)
    assert aux.stype == "csr" and (aux.asnumpy() == 1).all()
    scratch = [mx.nd.full((4, 10), 7.0) for _ in range(32)]   # takes the freed blocks
    mx.nd.waitall()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * x.asnumpy(), rtol=1e-5)
    assert all((s.asnumpy() == 7).all() for s in scratch)


def test_autograd_two_outputs_gradients_match_numpy():
    a, b = _nd(np.random.rand(2, 3)), _nd(np.random.rand(2, 3))
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        prod, total = mx.nd.Custom(a, b, op_type="test_muladd", scale=3)
        loss = (prod * 2 + total).sum()
    loss.backward()
    an, bn = a.asnumpy(), b.asnumpy()
    np.testing.assert_allclose(a.grad.asnumpy(), 2 * bn + 1, rtol=1e-5)
    np.testing.assert_allclose(b.grad.asnumpy(), 2 * an + 3, rtol=1e-5)


def test_autograd_gradient_agrees_with_finite_differences():
    x0 = np.random.uniform(-1.5, 1.5, (3, 4)).astype(np.float64)
    x = mx.nd.array(x0, dtype=np.float64)
    x.attach_grad()
    weights = np.random.rand(3, 4)
    with mx.autograd.record():
        loss = (mx.nd.Custom(x, op_type="test_tanh") * mx.nd.array(weights, dtype=np.float64)).sum()
    loss.backward()
    eps = 1e-6
    numeric = np.zeros_like(x0)
    for idx in np.ndindex(*x0.shape):
        up, down = x0.copy(), x0.copy()
        up[idx] += eps
        down[idx] -= eps
        numeric[idx] = ((np.tanh(up) - np.tanh(down)) * weights).sum() / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-6, atol=1e-8)


def test_need_top_grad_false_backward_still_runs():
    class MulNoGrad(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * in_data[1])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], in_data[1])
            self.assign(in_grad[1], req[1], in_data[0])

    @mx.operator.register("test_mul_no_grad")
    class MulNoGradProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=False)

        def list_arguments(self):
            return ["lhs", "rhs"]

        def create_operator(self, ctx, shapes, dtypes):
            return MulNoGrad()

    lhs, rhs = _nd(np.random.rand(4, 5)), _nd(np.random.rand(4, 5))
    lhs.attach_grad()
    rhs.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(lhs, rhs, op_type="test_mul_no_grad")
    y.backward()
    np.testing.assert_allclose(lhs.grad.asnumpy(), rhs.asnumpy())
    np.testing.assert_allclose(rhs.grad.asnumpy(), lhs.asnumpy())
    # the output gradient is not a dependency: the backward op reads it for its shape only
    attrs = ops.get("_backward_Custom").parse_attrs({"op_type": "test_mul_no_grad"})
    assert ops.get("_backward_Custom").shape_only(attrs) == (0,)


def test_forward_and_backward_of_one_call_share_the_operator_instance():
    class Stateful(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.mask = (in_data[0] > 0).asnumpy()
            self.assign(out_data[0], req[0], in_data[0] * mx.nd.array(self.mask))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * mx.nd.array(self.mask))

    @mx.operator.register("test_stateful_relu")
    class StatefulProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Stateful()

    xs = [_nd([-1.0, 2.0, 3.0]), _nd([4.0, -5.0, 6.0])]
    outs = []
    for x in xs:
        x.attach_grad()
    with mx.autograd.record():
        for x in xs:  # two calls before any backward: each keeps its own mask
            outs.append(mx.nd.Custom(x, op_type="test_stateful_relu"))
    mx.autograd.backward(outs)
    np.testing.assert_array_equal(xs[0].grad.asnumpy(), [0, 1, 1])
    np.testing.assert_array_equal(xs[1].grad.asnumpy(), [1, 0, 1])


# -- symbols and executors -----------------------------------------------------------------------

def test_symbol_names_and_inference_come_from_the_prop():
    lhs, rhs = mx.sym.Variable("lhs"), mx.sym.Variable("rhs")
    op = mx.sym.Custom(lhs, rhs, op_type="test_muladd", scale=2, name="ma")
    assert op.list_arguments() == ["lhs", "rhs"]
    assert op.list_outputs() == ["ma_prod", "ma_sum"]
    _, out_shapes, _ = op.infer_shape(lhs=(2, 7), rhs=(2, 7))
    assert out_shapes == [(2, 7), (2, 7)]
    _, out_types, _ = op.infer_type(lhs=np.float64, rhs=np.float64)
    assert out_types == [np.float64, np.float64]
    sq = mx.sym.Custom(data=mx.sym.Variable("data"), op_type="test_square", name="sq")
    assert sq.list_arguments() == ["data"] and sq.list_auxiliary_states() == ["sq_aux"]
    arg, out, aux = sq.infer_shape(data=(3, 2))
    assert (arg, out, aux) == ([(3, 2)], [(3, 2)], [(3, 2)])


def test_executor_forward_backward_matches_numpy():
    data = mx.sym.Variable("data")
    net = mx.sym.Custom(data=data, op_type="test_square", name="sq") * 3
    x = np.random.uniform(-1, 1, (5, 6)).astype(np.float32)
    ex = net.simple_bind(mx.cpu(), data=(5, 6))
    ex.forward(is_train=True, data=_nd(x))
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), 3 * x * x, rtol=1e-6)
    np.testing.assert_array_equal(ex.aux_dict["sq_aux"].asnumpy(), np.ones((5, 6)))
    head = np.random.rand(5, 6).astype(np.float32)
    ex.backward(_nd(head))
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), 6 * x * head, rtol=1e-5)


def test_executor_grad_req_add_accumulates():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    prod = mx.sym.Custom(a, b, op_type="test_muladd", name="ma")[0]
    av, bv = np.random.rand(2, 2).astype(np.float32), np.random.rand(2, 2).astype(np.float32)
    ex = prod.simple_bind(mx.cpu(), grad_req="add", a=(2, 2), b=(2, 2))
    for _ in range(2):
        ex.forward(is_train=True, a=_nd(av), b=_nd(bv))
        ex.backward(mx.nd.ones((2, 2)))
    np.testing.assert_allclose(ex.grad_dict["a"].asnumpy(), 2 * bv, rtol=1e-6)
    np.testing.assert_allclose(ex.grad_dict["b"].asnumpy(), 2 * av, rtol=1e-6)


def test_custom_symbol_json_round_trip():
    net = mx.sym.Custom(mx.sym.Variable("a"), mx.sym.Variable("b"), op_type="test_muladd", scale=4, name="ma")
    doc = json.loads(net.tojson())
    node = next(n for n in doc["nodes"] if n["op"] == "Custom")
    assert node["attrs"] == {"op_type": "test_muladd", "scale": "4"}
    back = mx.sym.load_json(net.tojson())
    av, bv = np.random.rand(3).astype(np.float32), np.random.rand(3).astype(np.float32)
    outs = back.eval(a=_nd(av), b=_nd(bv))
    np.testing.assert_allclose(outs[1].asnumpy(), av + 4 * bv, rtol=1e-6)


def test_large_arrays_run_nested_ops_without_deadlock():
    # The output is small (the op may run inline in the caller while the engine is idle) but the
    # ops the forward pushes are large; in an executor the op runs on a worker.
    class SumSquares(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            sq = in_data[0] * in_data[0]
            self.assign(out_data[0], req[0], mx.nd.sum(sq).reshape((1,)))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])

    @mx.operator.register("test_sum_squares")
    class SumSquaresProp(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return in_shape, [(1,)], []

        def create_operator(self, ctx, shapes, dtypes):
            return SumSquares()

    x = np.random.rand(300, 200).astype(np.float32)
    got = mx.nd.Custom(_nd(x), op_type="test_sum_squares").asnumpy()
    np.testing.assert_allclose(got, [(x.astype(np.float64) ** 2).sum()], rtol=1e-4)
    ex = mx.sym.Custom(mx.sym.Variable("x"), op_type="test_sum_squares").simple_bind(mx.cpu(), x=x.shape)
    ex.forward(is_train=True, x=_nd(x))
    ex.backward(mx.nd.ones((1,)))
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 2 * x, rtol=1e-6)


# -- assign ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("req, expected", [("write", [5.0, 5.0]), ("inplace", [5.0, 5.0]),
                                           ("add", [6.0, 7.0]), ("null", [1.0, 2.0])])
def test_assign_follows_req(req, expected):
    dst = _nd([1.0, 2.0])
    mx.operator.CustomOp().assign(dst, req, _nd([5.0, 5.0]))
    np.testing.assert_array_equal(dst.asnumpy(), expected)


def test_assign_rejects_unknown_req():
    with pytest.raises(ValueError, match="req"):
        mx.operator.CustomOp().assign(_nd([1.0]), "overwrite", _nd([2.0]))


# -- errors --------------------------------------------------------------------------------------------

def _dot_op(name, body):
    class Dot(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            body(in_data, out_data)

    @mx.operator.register(name)
    class DotProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ["a", "b"]

        def infer_shape(self, in_shape):
            return in_shape, [(in_shape[0][0], in_shape[1][1])]

        def create_operator(self, ctx, shapes, dtypes):
            return Dot()


def test_error_in_forward_surfaces_at_the_next_wait():
    def body(in_data, out_data):
        raise AssertionError("broken on purpose")
    _dot_op("test_fail_python", body)
    c = mx.nd.Custom(mx.nd.zeros((4, 1)), mx.nd.zeros((1, 4)), op_type="test_fail_python")  # no raise yet
    with pytest.raises(MXNetError, match="test_fail_python.*broken on purpose"):
        c.wait_to_read()


def test_error_of_an_op_pushed_inside_forward_surfaces():
    def bad_shapes(in_data, out_data):
        out_data[0][:] = mx.nd.dot(in_data[0], in_data[1])  # (4, 2) x (1, 4): refused at the call
    _dot_op("test_fail_shapes", bad_shapes)
    c = mx.nd.Custom(mx.nd.zeros((4, 2)), mx.nd.zeros((1, 4)), op_type="test_fail_shapes")
    with pytest.raises(MXNetError, match="test_fail_shapes"):
        c.wait_to_read()


@pytest.mark.parametrize("wait_inside", [True, False])
def test_error_while_running_an_op_pushed_inside_forward_surfaces(wait_inside):
    def body(in_data, out_data):
        out_data[0][:] = mx.nd.linalg.potrf(mx.nd.dot(in_data[0], in_data[1]))  # not positive definite
        if wait_inside:
            out_data[0].wait_to_read()
    name = f"test_fail_run_{wait_inside}"
    _dot_op(name, body)
    c = mx.nd.Custom(mx.nd.zeros((2, 1)), mx.nd.zeros((1, 2)), op_type=name)
    with pytest.raises(MXNetError):
        c.wait_to_read()


def test_unknown_op_type_and_missing_op_type_raise_at_the_call():
    with pytest.raises(OperatorError, match="no_such_custom_op"):
        mx.nd.Custom(mx.nd.ones((2,)), op_type="no_such_custom_op")
    with pytest.raises(OperatorError, match="op_type"):
        mx.nd.Custom(mx.nd.ones((2,)))
    with pytest.raises(OperatorError, match="no_such_custom_op"):
        mx.sym.Custom(mx.sym.Variable("x"), op_type="no_such_custom_op")


def test_bad_infer_shape_answer_is_a_shape_error():
    @mx.operator.register("test_bad_infer")
    class BadProp(mx.operator.CustomOpProp):
        def infer_shape(self, in_shape):
            return in_shape, []  # one output declared, none returned

    with pytest.raises(ShapeError, match="test_bad_infer.*1"):
        mx.nd.Custom(mx.nd.ones((2,)), op_type="test_bad_infer")


def test_prop_constructor_rejecting_keywords_names_them():
    with pytest.raises(OperatorError, match="test_square.*bogus"):
        mx.nd.Custom(mx.nd.ones((2,)), mx.nd.ones((2,)), op_type="test_square", bogus=1)


def test_custom_is_a_registry_op():
    assert ops.exists("Custom") and ops.exists("_backward_Custom")
    assert "Custom" in mx.operator.get_all_registered_operators()


# -- training through Module -----------------------------------------------------------------

class _SoftmaxLoss(mx.operator.CustomOp):
    """Softmax output whose backward is (p - onehot(label)), like MXNet's custom softmax example."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        e = np.exp(x - x.max(axis=1, keepdims=True))
        self.assign(out_data[0], req[0], mx.nd.array(e / e.sum(axis=1, keepdims=True)))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1].asnumpy().astype(int)
        grad = out_data[0].asnumpy().copy()
        grad[np.arange(len(label)), label] -= 1
        self.assign(in_grad[0], req[0], mx.nd.array(grad))


@mx.operator.register("test_softmax_loss")
class _SoftmaxLossProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ["data", "label"]

    def infer_shape(self, in_shape):
        return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _SoftmaxLoss()


def test_module_trains_with_a_custom_loss():
    rng = np.random.RandomState(0)
    centers = rng.randn(3, 8) * 3
    labels = rng.randint(0, 3, 300)
    data = (centers[labels] + rng.randn(300, 8)).astype(np.float32)
    it = mx.io.NDArrayIter(data, labels.astype(np.float32), batch_size=30, label_name="softmax_label")
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    net = mx.sym.Custom(data=fc, label=mx.sym.Variable("softmax_label"), op_type="test_softmax_loss",
                        name="softmax")
    assert net.infer_shape(data=(30, 8))[0] == [(30, 8), (3, 8), (3,), (30,)]  # the label shape comes from the prop
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.fit(it, num_epoch=5, optimizer="sgd", optimizer_params={"learning_rate": 0.1}, initializer=mx.init.Xavier())
    acc = dict(mod.score(it, "acc"))["accuracy"]
    assert acc > 0.9


def test_undeclared_dependencies_reach_backward_as_zeros():
    seen = {}

    class Spy(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            seen.update(ograd=out_grad[0].asnumpy(), data=in_data[0].asnumpy(), out=out_data[0].asnumpy())
            self.assign(in_grad[0], req[0], out_data[0])

    @mx.operator.register("test_spy")
    class SpyProp(mx.operator.CustomOpProp):
        def declare_backward_dependency(self, out_grad, in_data, out_data):
            return list(out_data)

        def create_operator(self, ctx, shapes, dtypes):
            return Spy()

    x = mx.sym.Variable("x")
    ex = mx.sym.Custom(x, op_type="test_spy").simple_bind(mx.cpu(), x=(2,))
    ex.forward(is_train=True, x=_nd([1.0, 3.0]))
    ex.backward()  # the output gradient is not a dependency: no head gradient needed
    ex.grad_dict["x"].wait_to_read()  # backward is an engine op: it has run once its result is ready
    np.testing.assert_array_equal(seen["out"], [2.0, 6.0])
    np.testing.assert_array_equal(seen["ograd"], [0.0, 0.0])
    np.testing.assert_array_equal(seen["data"], [0.0, 0.0])
    np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), [2.0, 6.0])


def test_custom_nodes_on_parallel_branches_of_an_executor(monkeypatch):
    # one node per engine op: independent Custom nodes may run at once on different workers
    monkeypatch.setenv("EMBER_EXEC_BULK_EXEC_MAX_NODE", "1")
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    net = (mx.sym.Custom(a, op_type="test_tanh") + mx.sym.Custom(b, op_type="test_tanh")
           + mx.sym.Custom(a * b, op_type="test_tanh"))
    shape = (200, 150)
    ex = net.simple_bind(mx.cpu(), a=shape, b=shape)
    rng = np.random.RandomState(1)
    for _ in range(5):
        av, bv = rng.uniform(-1, 1, shape).astype(np.float32), rng.uniform(-1, 1, shape).astype(np.float32)
        ex.forward(is_train=True, a=_nd(av), b=_nd(bv))
        ex.backward(mx.nd.ones(shape))
        np.testing.assert_allclose(ex.outputs[0].asnumpy(), np.tanh(av) + np.tanh(bv) + np.tanh(av * bv),
                                   rtol=1e-5, atol=1e-6)
        expected = (1 - np.tanh(av) ** 2) + (1 - np.tanh(av * bv) ** 2) * bv
        np.testing.assert_allclose(ex.grad_dict["a"].asnumpy(), expected, rtol=1e-4, atol=1e-5)
