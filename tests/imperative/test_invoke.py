"""The generic invoke path: arity, aux states, mutated inputs, hidden outputs, variadic ops, ctx=."""
import numpy as np
import pytest

import ember as mx
from ember import ops
from ember.base import OperatorError, ShapeError
from ember.ops import Attr, OpDef


def _reg(op):
    if not ops.exists(op.name):
        ops.register(op)
    return ops.get(op.name)


def _running_mean_kernel(ctx, attrs, inputs, outputs, aux):
    m = attrs["momentum"]
    aux[0][...] = m * aux[0] + (1 - m) * inputs[0].mean(axis=0)
    outputs[0][...] = inputs[0] - aux[0]
    outputs[1][...] = inputs[0].mean(axis=0)


_reg(OpDef("_test_imperative_running_mean", attrs={"momentum": Attr("float", 0.5)},
           inputs=["data"], outputs=["output", "batch_mean"], aux=["moving_mean"],
           infer_shape=lambda a, s, aux: (s, [s[0], (s[0][1],)], [(s[0][1],)]),
           kernels={"any": _running_mean_kernel}, num_visible_outputs=lambda a: 1,
           doc="test-only: op with an aux state and a hidden output"))


def _sum_n_kernel(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = sum(inputs)


_reg(OpDef("_test_imperative_sum_n", attrs={"num_args": Attr("int")},
           inputs=lambda a: [f"arg{i}" for i in range(a["num_args"])], key_var_num_args="num_args",
           infer_shape=lambda a, s: (s, [s[0]]), kernels={"any": _sum_n_kernel},
           doc="test-only: variadic sum"))


def _fill_kernel(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = attrs["value"]


_reg(OpDef("_test_imperative_fill", attrs={"shape": Attr("shape"), "value": Attr("float", 0.0)},
           inputs=[], infer_shape=lambda a, s: ([], [a["shape"]]),
           infer_type=lambda a, d: ([], [np.dtype(np.float32)]), kernels={"any": _fill_kernel}))


def test_aux_state_is_written_and_hidden_output_not_returned():
    x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    mm = mx.nd.zeros((2,))
    y = mx.nd._test_imperative_running_mean(x, mm, momentum=0.5)
    assert isinstance(y, mx.nd.NDArray)
    np.testing.assert_allclose(mm.asnumpy(), [1.0, 1.5])
    np.testing.assert_allclose(y.asnumpy(), [[0.0, 0.5], [2.0, 2.5]])
    y2 = mx.nd._test_imperative_running_mean(data=x, moving_mean=mm)
    np.testing.assert_allclose(mm.asnumpy(), [1.5, 2.25])
    np.testing.assert_allclose(y2.asnumpy(), x.asnumpy() - [1.5, 2.25])


def test_aux_shape_is_checked():
    with pytest.raises(ShapeError, match="moving_mean"):
        mx.nd._test_imperative_running_mean(mx.nd.ones((2, 2)), mx.nd.zeros((3,)))


def test_mutated_inputs_are_ordered_writes():
    x = mx.nd.zeros((3,))
    outs = [mx.nd._test_imperative_increment(x) for _ in range(20)]
    np.testing.assert_array_equal(x.asnumpy(), np.full(3, 20.0))
    np.testing.assert_array_equal([o.asnumpy()[0] for o in outs], np.arange(1, 21))
    # out= the mutated input itself (declared in-place pair)
    mx.nd._test_imperative_increment(x, out=x)
    np.testing.assert_array_equal(x.asnumpy(), np.full(3, 21.0))


def test_variadic_op_sets_num_args():
    arrays = [mx.nd.full((2,), float(i)) for i in range(4)]
    np.testing.assert_array_equal(mx.nd._test_imperative_sum_n(*arrays).asnumpy(), [6.0, 6.0])


def test_ops_without_inputs_take_ctx_and_positional_attrs():
    a = mx.nd._test_imperative_fill(shape=(2, 2), value=3.0, ctx=mx.cpu(1))
    assert a.context == mx.cpu(1)
    np.testing.assert_array_equal(a.asnumpy(), np.full((2, 2), 3.0))
    b = mx.nd._test_imperative_fill((3,), 1.5)  # attributes in declaration order
    np.testing.assert_array_equal(b.asnumpy(), [1.5, 1.5, 1.5])
    with mx.cpu(2):
        assert mx.nd._test_imperative_fill(shape=(1,), ctx="cpu(3)").context == mx.cpu(3)
        assert mx.nd._test_imperative_fill(shape=(1,)).context == mx.cpu(2)


def test_invoke_api_and_arity_errors():
    from ember.imperative import invoke
    x = mx.nd.ones((2,))
    y = invoke("_plus_scalar", [x], {"scalar": "2"})  # string attrs parse like JSON attrs
    np.testing.assert_array_equal(y.asnumpy(), [3.0, 3.0])
    with pytest.raises(OperatorError, match="expected 2 input arrays"):
        invoke("broadcast_add", [x], {})
    with pytest.raises(OperatorError, match="required attribute 'shape'"):
        invoke("_test_imperative_fill", [], {})
    with pytest.raises(TypeError, match="positional"):
        mx.nd._plus_scalar(x, 1.0, 2.0)


def test_out_aliasing_a_non_elementwise_input_uses_scratch():
    def rev_kernel(ctx, attrs, inputs, outputs, aux):
        n = inputs[0].shape[0]
        for i in range(n):  # reads element n-1-i after writing element i: wrong if aliased
            outputs[0][i] = inputs[0][n - 1 - i]

    _reg(OpDef("_test_imperative_reverse", infer_shape=lambda a, s: (s, [s[0]]),
               kernels={"any": rev_kernel}))
    x = mx.nd.array([1.0, 2.0, 3.0, 4.0])
    mx.nd._test_imperative_reverse(x, out=x)
    np.testing.assert_array_equal(x.asnumpy(), [4.0, 3.0, 2.0, 1.0])


def test_outputs_into_views_of_one_array():
    x = mx.nd.array(np.arange(8, dtype=np.float32).reshape(4, 2))
    y = mx.nd.zeros((4, 2))
    # both outputs write the same var (views of y); reversed halves
    mx.nd.split(x, num_outputs=2, axis=0, out=[y[2:4], y[0:2]])
    np.testing.assert_array_equal(y.asnumpy(), np.concatenate([x.asnumpy()[2:], x.asnumpy()[:2]]))


# -- the four steps of invoke.run, and the module structure -------------------------------
def test_check_infer_allocate_are_the_call_time_rules():
    import sys
    from ember.base import DTypeError
    inv = sys.modules["ember.imperative.invoke"]  # (ember.imperative.invoke is the function)
    add = ops.get("broadcast_add")
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((1, 3))
    assert inv.check(add, {}, [a, b]) is a.context
    with pytest.raises(OperatorError, match="expected 2 input arrays"):
        inv.check(add, {}, [a])
    with pytest.raises(TypeError, match="input 'rhs' must be an NDArray"):
        inv.check(add, {}, [a, np.ones(3)])
    shapes, dtypes = inv.infer(add, {}, [a, b])
    assert shapes == [(2, 3)] and dtypes == [np.dtype("float32")]
    with pytest.raises(ShapeError):
        inv.infer(add, {}, [a, mx.nd.ones((4, 5))])
    fc = ops.get("FullyConnected")
    attrs = fc.parse_attrs({"num_hidden": 4})
    with pytest.raises(ShapeError, match="weight has shape"):
        inv.infer(fc, attrs, [mx.nd.ones((2, 3)), mx.nd.ones((5, 3)), mx.nd.ones((4,))])
    with pytest.raises(DTypeError, match="rhs has dtype float64"):
        inv.infer(add, {}, [a, mx.nd.ones((1, 3), dtype="float64")])
    out = mx.nd.zeros((2, 3))
    assert inv.allocate(add, {}, shapes, dtypes, a.context, out)[0] is out
    fresh = inv.allocate(add, {}, shapes, dtypes, a.context)[0]
    assert fresh.shape == (2, 3) and fresh.dtype == np.float32
    with pytest.raises(ShapeError, match="out= array 0 has shape"):
        inv.allocate(add, {}, shapes, dtypes, a.context, mx.nd.zeros((3, 2)))


def test_plans_are_made_by_the_general_rules():
    # a plan exists only where check/infer accept the call and the op may run in the caller
    from ember.imperative import fastpath
    from ember.imperative.invoke import INLINE_MAX_ELEMENTS
    fastpath._forget_plans()
    small, big = mx.nd.ones((3,)), mx.nd.ones((INLINE_MAX_ELEMENTS + 1,))
    (small + small).wait_to_read()
    (big + big).wait_to_read()
    plans = mx.nd.NDArray.__add__.plans[0]
    f32 = np.dtype("float32")
    sig = fastpath.sig_of
    assert plans[(sig((3,), f32), sig((3,), f32))]
    assert plans[(sig((INLINE_MAX_ELEMENTS + 1,), f32), sig((INLINE_MAX_ELEMENTS + 1,), f32))] is False
    with pytest.raises(ShapeError):
        mx.nd.ones((2,)) + mx.nd.ones((3,))
    assert plans[(sig((2,), f32), sig((3,), f32))] is False  # the general path raised the error


def _imports(module: str):
    """The ember.imperative modules `module` imports at its top level (not inside functions)."""
    import ast
    import importlib
    tree = ast.parse(open(importlib.import_module(module).__file__).read())
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module} if node.module else {a.name for a in node.names}
    return found


def test_ndarray_invoke_fastpath_have_no_import_cycle():
    # NDArray is the base: the modules built on it are wired back by ember/imperative/__init__.py
    assert not _imports("ember.imperative.ndarray") & {"invoke", "fastpath", "indexing", "copying", "dlpack"}
    assert "fastpath" not in _imports("ember.imperative.invoke")
    assert "invoke" in _imports("ember.imperative.fastpath")
    x = mx.nd.ones((2,))
    assert mx.nd.NDArray.__add__.plans  # the operators are the tiny-op path's methods
    np.testing.assert_array_equal((x[0:1] + 1).asnumpy(), [2])  # indexing wired
