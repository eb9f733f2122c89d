"""Shared fixtures for the imperative tests: a quiet engine between tests, test-only ops."""
import numpy as np
import pytest

import ember.engine as engine
from ember import ops
from ember.ops import Attr, OpDef


def _drain():
    engine.wait_all_quiet()
    try:
        engine.wait_all()
    except BaseException:  # noqa: BLE001 - errors of a previous test's async failures
        pass


@pytest.fixture(autouse=True)
def _quiet_engine():
    _drain()
    yield
    _drain()


def _same_shape(attrs, in_shapes):
    return in_shapes, [in_shapes[0]]


def _register_once(op):
    if not ops.exists(op.name):
        ops.register(op)
    return ops.get(op.name)


def _uniform_kernel(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = ctx.rng.random(outputs[0].shape)


def _uniform_shape(attrs, in_shapes):
    return [], [attrs["shape"]]


def _uniform_type(attrs, in_dtypes):
    return [], [np.dtype(np.float64)]


TEST_UNIFORM = _register_once(OpDef(
    "_test_imperative_uniform", attrs={"shape": Attr("shape")}, inputs=[], outputs=["output"],
    infer_shape=_uniform_shape, infer_type=_uniform_type, kernels={"any": _uniform_kernel},
    resources=("rng",), doc="test-only: U[0,1) draws from ctx.rng"))


def _fail_kernel(ctx, attrs, inputs, outputs, aux):
    raise ValueError("test kernel failure: bad values")


TEST_FAIL = _register_once(OpDef(
    "_test_imperative_fail", inputs=["data"], infer_shape=_same_shape,
    kernels={"any": _fail_kernel}, doc="test-only: a kernel that always raises"))


def _scale_kernel(ctx, attrs, inputs, outputs, aux):
    np.multiply(inputs[0], 2.0, out=outputs[0])


TEST_NOGRAD = _register_once(OpDef(
    "_test_imperative_nograd", inputs=["data"], infer_shape=_same_shape,
    kernels={"any": _scale_kernel}, gradient=None, doc="test-only: 2x with no gradient"))


def _mutate_kernel(ctx, attrs, inputs, outputs, aux):
    inputs[0] += 1
    outputs[0][...] = inputs[0]


TEST_MUTATE = _register_once(OpDef(
    "_test_imperative_increment", inputs=["data"], infer_shape=_same_shape,
    kernels={"any": _mutate_kernel}, mutates=[0], inplace=[(0, 0)],
    doc="test-only: data += 1 in place; output = new data"))
