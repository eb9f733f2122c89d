"""The facts other components act on are declared OpDef fields: elementwise, expensive, ufunc_form."""
import numpy as np
import pytest

import ember as mx
from ember import ops
from ember.ops.registry import OpContext, OpDef, UfuncForm

_ATTRS = {"clip": {"a_min": 0.2, "a_max": 0.8}, "Cast": {"dtype": "float64"}, "_contrib_gradientmultiplier": {"scalar": 2.0}}
ELEMENTWISE = sorted(n for n in ops.list() if ops.get(n).elementwise)


def test_elementwise_covers_the_arithmetic_and_unary_ops():
    for name in ("negative", "abs", "exp", "sqrt", "relu", "sigmoid", "tanh", "clip", "Cast", "_copy",
                 "broadcast_add", "broadcast_mod", "elemwise_mul", "_plus_scalar", "_rmod_scalar", "_equal"):
        assert ops.get(name).elementwise, name
    for name in ("dot", "sum", "transpose", "broadcast_to", "_slice_assign_scalar", "softmax"):
        assert not ops.get(name).elementwise, name


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_kernels_may_write_over_an_input(name):
    """The declared promise: writing the output over any input (same layout) gives the same result."""
    op = ops.get(name)
    attrs = op.parse_attrs(_ATTRS.get(name, {}))
    rng = np.random.default_rng(0)
    ins = [rng.uniform(0.1, 0.9, (3, 4)) for _ in op.input_names(attrs)]
    ins[-1][0, 0] = 0.0  # a zero divisor for mod
    kernel = op.kernel("cpu")
    want = np.empty((3, 4))
    with np.errstate(all="ignore"):
        kernel(OpContext(np), attrs, [x.copy() for x in ins], [want], [])
        for i in range(len(ins)):
            aliased = [x.copy() for x in ins]
            kernel(OpContext(np), attrs, aliased, [aliased[i]], [])
            np.testing.assert_array_equal(aliased[i], want, err_msg=f"{name}: output over input {i}")


def test_out_aliasing_an_input_runs_in_place():
    x = mx.nd.array([5.0, -7.0, 9.0])
    mx.nd.broadcast_mod(mx.nd.array([3.0, 3.0, 3.0]), x, out=x)
    np.testing.assert_array_equal(x.asnumpy(), np.mod(3.0, [5.0, -7.0, 9.0]))
    y = mx.nd.array([5, 0, 9], dtype="int32")
    mx.nd._rmod_scalar(y, scalar=3, out=y)
    np.testing.assert_array_equal(y.asnumpy(), [3, 0, 3])  # MXNet: 0 for a zero divisor


def test_expensive_ops_are_the_ones_mirroring_keeps():
    expensive = {n for n in ops.list() if ops.get(n).expensive}
    assert expensive >= {"FullyConnected", "Convolution", "Deconvolution", "dot", "batch_dot", "RNN", "Embedding",
                         "SoftmaxOutput", "linalg_gemm", "linalg_gemm2"}  # MXNet's list
    assert not expensive & {"relu", "elemwise_add", "BatchNorm", "Activation", "Pooling", "Reshape", "Concat"}


def test_ufunc_forms_are_checked_and_dropped_by_override():
    with pytest.raises(ValueError, match="ufunc form"):
        OpDef("_test_bad_form", kernels={"any": lambda *a: None}, ufunc_form=UfuncForm("ternary", np.add))
    op = ops.get("_mul_scalar")
    assert op.cpu_ufunc() == ("scalar", np.multiply, "biuf", None, None)
    assert ops.get("tanh").cpu_ufunc() == ("unary", np.tanh, "biuf", None, None)
    assert ops.get("relu").cpu_ufunc() == ("scalar", np.maximum, "iuf", 0.0, 4096)  # its native kernel from 4096 on
    old = ops.override("_mul_scalar", "cpu", op.kernel("cpu"))  # the same function: the form still holds
    try:
        assert op.cpu_ufunc() is not None
        ops.override("_mul_scalar", "cpu", lambda ctx, attrs, inputs, outputs, aux: None)
        assert op.cpu_ufunc() is None
    finally:
        ops.override("_mul_scalar", "cpu", old)
    assert op.cpu_ufunc() is not None
