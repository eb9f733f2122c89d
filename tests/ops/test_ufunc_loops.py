"""numpy's inner loops run natively for ufunc-form ops in bound graphs (ember/ops/ufunc_loops.py)."""
import warnings

import numpy as np
import pytest

import ember as mx
from ember import ops
from ember.ops import registry, ufunc_loops


def _probe(dtype, shape=(7, 9)):
    """Values with the awkward cases (signed zeros, infinities, NaN, subnormals) and ordinary ones."""
    rs = np.random.RandomState(3)
    info = np.finfo(dtype)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, float(info.tiny), float(info.smallest_subnormal)]
    n = int(np.prod(shape))
    vals = np.concatenate([special, rs.standard_normal(n) * 3])[:n]
    return rs.permutation(vals).reshape(shape).astype(dtype)


def _form_ops():
    for name in sorted(ops.list()):
        form = registry.get(name).cpu_ufunc()
        if form is not None and isinstance(form.ufunc, np.ufunc) and name == registry.get(name).name:
            yield name


def _symbol_of(name, form, x, y):
    fn = getattr(mx.sym, name, None) or getattr(mx.sym._internal, name)
    if form.form == "binary":
        return fn(x, y)
    if form.form in ("scalar", "rscalar") and form.constant is None:
        return fn(x, scalar=1.7)
    return fn(x)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_every_ufunc_form_op_in_a_bound_graph_equals_its_kernel_bit_for_bit(dtype):
    looped = []
    for name in _form_ops():
        opdef = registry.get(name)
        form = opdef.cpu_ufunc()
        if np.dtype(dtype).kind not in form.kinds:
            continue
        a, b = _probe(dtype), np.roll(_probe(dtype), 5)
        x, y = mx.sym.var("x"), mx.sym.var("y")
        sym = _symbol_of(name, form, x, y)
        args = {"x": mx.nd.array(a, dtype=dtype)}
        if form.form == "binary":
            args["y"] = mx.nd.array(b, dtype=dtype)
        try:
            exe = sym.bind(mx.cpu(), args, grad_req="null")
            got = exe.forward()[0].asnumpy()
        except mx.base.MXNetError:
            continue  # not defined on this dtype: nothing to compare
        want = np.empty(a.shape, got.dtype)
        ins = [a, b] if form.form == "binary" else [a]
        attrs = opdef.parse_attrs({"scalar": "1.7"} if "scalar" in opdef.attrs else {})
        with np.errstate(all="ignore"):
            opdef.kernel("cpu")(registry.OpContext(np), attrs, ins, [want], [])
        bits = np.dtype(f"u{want.dtype.itemsize}")
        np.testing.assert_array_equal(got.view(bits), want.view(bits), err_msg=f"{name} {dtype}")
        if any(st is not None and st.loop is not None for st in exe._runners):
            looped.append(name)
    assert len(looped) >= 40, sorted(looped)
    # the loops are really taken: arithmetic, scalar forms, relu and the transcendental functions
    assert {"broadcast_add", "elemwise_add", "_maximum", "broadcast_mul", "_plus_scalar", "_rdiv_scalar", "relu",
            "tanh", "log", "sqrt", "abs"} <= set(looped), sorted(looped)


def test_loop_of_takes_only_what_numpy_runs_as_one_plain_loop():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.empty_like(a)
    s = np.array(2.0, np.float32)
    assert ufunc_loops.loop_of(np.add, (a, a), out) is not None
    assert ufunc_loops.loop_of(np.add, (a, s), out) is not None       # a scalar operand (stride 0)
    assert ufunc_loops.loop_of(np.tanh, (a,), a) is not None          # in place
    assert ufunc_loops.loop_of(np.add, (a, s.astype(np.float64)), out) is None  # another dtype
    assert ufunc_loops.loop_of(np.add, (a, a[:, :1].copy()), out) is None     # broadcasting
    assert ufunc_loops.loop_of(np.add, (a.T, a.T), out.T) is None              # not C-contiguous
    flat = np.arange(10, dtype=np.float32)
    assert ufunc_loops.loop_of(np.negative, (flat[1:9],), flat[:8]) is None     # overlapping, not in place
    i = np.arange(4, dtype=np.int32)
    assert ufunc_loops.loop_of(np.add, (i, i), np.empty_like(i)) is None        # integers: numpy's path
    assert ufunc_loops.loop_of(np.add, (a,), out) is None                       # wrong arity
    assert ufunc_loops.loop_of(np.add, (a, a), np.empty((3, 0), np.float32)) is None
    assert ufunc_loops.loop_of(np.greater, (a, a), out) is None  # its output is bool: no f,f->f loop


def test_a_loop_that_disagrees_with_its_ufunc_is_refused():
    sub = ufunc_loops._UFuncHead.from_address(id(np.subtract))
    i = np.subtract.types.index("ff->f")
    wrong = (sub.functions[i], sub.data[i] or 0)
    assert not ufunc_loops._agrees(np.add, "f", wrong)
    add = ufunc_loops.inner_loop(np.add, "f")
    assert add is not None and ufunc_loops._agrees(np.add, "f", add)


def test_loops_run_the_same_values_as_the_ufuncs_with_operands_in_place():
    a = _probe(np.float32, (5, 300))
    b = np.roll(a, 3)
    for ufunc, operands in ((np.multiply, (a, b)), (np.maximum, (b, np.array(0, np.float32))), (np.tanh, (a,))):
        want = ufunc(*operands)
        out = operands[0].copy()
        loop = ufunc_loops.loop_of(ufunc, (out,) + operands[1:], out)
        mx.engine.native.ufunc_loops([loop.spec])()
        np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32), err_msg=ufunc.__name__)


def test_floating_point_errors_in_loops_give_no_warning():
    x = mx.sym.var("x")
    exe = mx.sym.log(x * 0.0).simple_bind(mx.cpu(), grad_req="null", x=(4,))
    assert all(st.loop is not None for st in exe._runners if st is not None)
    exe.arg_dict["x"][:] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = exe.forward()[0].asnumpy()
        np.log(np.float32(2.0))  # and numpy's own status is clean after them
    assert np.all(got == -np.inf)


@pytest.mark.parametrize("bulk", ["1", "3", "15"])
def test_segments_mixing_loops_kernels_and_random_draws_train_correctly(bulk, monkeypatch):
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN", bulk)
    x, w = mx.sym.var("x"), mx.sym.var("w")
    h = mx.sym.tanh(mx.sym.FullyConnected(x, w, num_hidden=6, no_bias=True) * 0.5 + 0.1)
    h = mx.sym.Dropout(mx.sym.relu(h - 0.2), p=0.5)
    out = mx.sym.make_loss(mx.sym.sum(mx.sym.sqrt(mx.sym.abs(h) + 1.0)))
    xv = _probe(np.float32, (4, 5))
    xv[~np.isfinite(xv)] = 0.3
    wv = np.random.RandomState(1).standard_normal((6, 5)).astype(np.float32)
    exe = out.bind(mx.cpu(), {"x": mx.nd.array(xv), "w": mx.nd.array(wv)},
                   args_grad={"w": mx.nd.zeros((6, 5))}, grad_req={"x": "null", "w": "write"})
    assert any(st is not None and st.loop is not None for st in exe._runners)
    mx.random.seed(7)
    got = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    # the same graph through the imperative path, on the same random draw
    mx.random.seed(7)
    xa, wa = mx.nd.array(xv), mx.nd.array(wv)
    wa.attach_grad()
    with mx.autograd.record():
        ha = mx.nd.tanh(mx.nd.FullyConnected(xa, wa, num_hidden=6, no_bias=True) * 0.5 + 0.1)
        ha = mx.nd.Dropout(mx.nd.relu(ha - 0.2), p=0.5)
        oa = mx.nd.sum(mx.nd.sqrt(mx.nd.abs(ha) + 1.0))
    oa.backward()
    np.testing.assert_allclose(got, oa.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), wa.grad.asnumpy(), rtol=1e-5, atol=1e-6)


def test_scalar_operands_stay_alive_with_the_executor():
    import gc
    x = mx.sym.var("x")
    exe = ((x * 3.0) + 0.25).simple_bind(mx.cpu(), grad_req="null", x=(64,))
    exe.arg_dict["x"][:] = 2.0
    gc.collect()
    junk = [np.full(1, 99.0, np.float32) for _ in range(2000)]  # would reuse freed scalar memory
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), np.full(64, 6.25, np.float32))
    del junk
