"""mx.test_utils: tolerances, comparisons and their messages, symbol checks, contexts, environment."""
import os

import numpy as np
import pytest

import ember as mx
from ember import test_utils as tu


# -- tolerances ----------------------------------------------------------------------------------

def test_default_tolerances_per_dtype():
    assert tu.default_rtols()[np.dtype(np.float16)] == 1e-2
    assert tu.default_rtols()[np.dtype(np.float32)] == 1e-4
    assert tu.default_rtols()[np.dtype(np.float64)] == 1e-5
    assert tu.default_atols()[np.dtype(np.float16)] == 1e-1
    assert tu.default_atols()[np.dtype(np.float32)] == 1e-3
    assert tu.default_atols()[np.dtype(np.float64)] == 1e-20
    assert tu.default_rtols()[np.dtype(np.int32)] == 0 and tu.default_atols()[np.dtype(np.bool_)] == 0
    assert tu.get_rtol() == 1e-5 and tu.get_atol() == 1e-20          # float64 when not given
    assert tu.get_rtol(0.5) == 0.5 and tu.get_atol(dtype=np.float16) == 1e-1
    assert tu.default_dtype() is np.float32
    assert tu.effective_dtype(mx.nd.ones(2, dtype="float16")) == np.float16


def test_get_tols_takes_the_looser_dtype_and_dict_entries():
    a16, a64 = np.ones(2, np.float16), np.ones(2, np.float64)
    assert tu.get_tols(a16, a64, None, None) == (1e-2, 1e-1)
    assert tu.get_tols(a64, a64, {np.dtype(np.float64): 0.3}, 0.2) == (0.3, 0.2)
    assert tu.get_tols(1.0, a64, None, None) == (1e-5, 1e-20)  # a Python number is float64


def test_assert_almost_equal_uses_the_dtype_tolerances():
    a = np.ones(4, np.float32)
    tu.assert_almost_equal(a, a + 5e-4)                       # within float32's atol 1e-3
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(a.astype(np.float64), a.astype(np.float64) + 5e-4)
    tu.assert_almost_equal(a.astype(np.float16), a.astype(np.float16) + np.float16(0.05))
    tu.assert_almost_equal(mx.nd.array(a), a + 1e-4)          # NDArray against numpy
    tu.assert_almost_equal(mx.nd.array(a), mx.nd.array(a + 1e-4))
    tu.assert_almost_equal(a, a + 0.5, rtol=0, atol=0.6)
    tu.assert_almost_equal(np.ones((2, 3)), np.ones(3))       # broadcast by default
    with pytest.raises(AssertionError, match="shape"):
        tu.assert_almost_equal(np.ones((2, 3)), np.ones(3), use_broadcast=False)


def test_assert_almost_equal_message_locates_the_largest_violation():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    b = a.copy()
    b[1, 2] += 0.5
    b[2, 3] += 0.1
    with pytest.raises(AssertionError) as err:
        tu.assert_almost_equal(a, b, rtol=0, atol=0.01, names=("expected", "got"))
    msg = str(err.value)
    assert "Location of maximum error: (1, 2), expected=6.00000000, got=6.50000000" in msg
    assert "rtol=0.000000e+00, atol=1.000000e-02" in msg
    assert "2 of 12 elements" in msg
    assert "(2, 3), expected=11.00000000, got=11.10000000" in msg      # the next violation is listed
    assert "Error 50.000000" in msg                                     # 0.5 / 0.01


def test_assert_almost_equal_nan_handling():
    a = np.array([1.0, np.nan])
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(a, a)
    tu.assert_almost_equal(a, a, equal_nan=True)
    with pytest.raises(AssertionError, match=r"\(1,\)"):
        tu.assert_almost_equal(a, np.array([1.0, 2.0]), equal_nan=True)
    tu.assert_almost_equal(np.array([np.inf, -np.inf]), np.array([np.inf, -np.inf]))
    tu.assert_almost_equal_ignore_nan(np.array([1.0, np.nan]), np.array([1.0, 5.0]))


def test_assert_almost_equal_bool_and_scalars():
    tu.assert_almost_equal(np.array([True, False]), np.array([True, False]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([True, False]), np.array([True, True]))
    tu.assert_almost_equal(np.float32(1.0), 1.0 + 1e-6)
    with pytest.raises(AssertionError, match="exceeds tolerance"):
        tu.assert_almost_equal(np.float64(1.0), 2.0)


def test_almost_equal_same_and_friends():
    a = np.random.rand(3, 4)
    assert tu.almost_equal(a, a + 1e-21)
    assert not tu.almost_equal(a, a + 1e-3)
    assert tu.almost_equal(a, a + 1e-3, rtol=0, atol=1e-2)
    assert tu.same(a, a.copy()) and not tu.same(a, a[:2])
    tu.assert_allclose(a, a)
    tu.assert_almost_equal_with_err(a, np.where(np.arange(12).reshape(3, 4) == 0, a + 1, a), etol=0.1)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(a, a + 1, etol=0.1)


def test_assert_exception():
    tu.assert_exception(int, ValueError, "x")
    with pytest.raises(AssertionError, match="did not raise"):
        tu.assert_exception(int, ValueError, "3")
    with pytest.raises(TypeError):  # another exception propagates
        tu.assert_exception(int, ValueError, [1])


# -- random data ---------------------------------------------------------------------------------

def test_random_shapes_and_arrays():
    np.random.seed(3)
    for _ in range(20):
        s2, s3, sn = tu.rand_shape_2d(4, 5), tu.rand_shape_3d(2, 3, 4), tu.rand_shape_nd(4, dim=3)
        assert len(s2) == 2 and 1 <= s2[0] <= 4 and 1 <= s2[1] <= 5
        assert len(s3) == 3 and all(1 <= d <= m for d, m in zip(s3, (2, 3, 4)))
        assert len(sn) == 4 and all(1 <= d <= 3 for d in sn)
    assert any(0 in tu.rand_shape_nd(6, dim=1, allow_zero_size=True) for _ in range(20))
    arr = tu.rand_ndarray((3, 4), dtype="float64")
    assert isinstance(arr, mx.nd.NDArray) and arr.shape == (3, 4) and arr.dtype == np.float64
    assert arr.context == tu.default_context()
    a, b = tu.random_arrays((2, 3), ())
    assert a.shape == (2, 3) and a.dtype == np.float32 and b.shape == ()
    assert tu.random_arrays((5,)).shape == (5,)
    assert sorted(tu.random_sample(list(range(10)), 10)) == list(range(10))
    with pytest.raises(ValueError, match="unknown storage type"):
        tu.rand_ndarray((2, 2), stype="dense")


def test_random_sparse_arrays():
    np.random.seed(5)
    rsp, (values, rows) = tu.rand_sparse_ndarray((8, 3), "row_sparse", density=0.5)
    assert rsp.stype == "row_sparse" and rsp.shape == (8, 3)
    dense = rsp.asnumpy()
    np.testing.assert_array_equal(np.flatnonzero(np.abs(dense).sum(axis=1)), rows)
    np.testing.assert_array_equal(dense[rows], values)
    fixed, (vals, rows) = tu.rand_sparse_ndarray((5, 2), "row_sparse", rsp_indices=[1, 3], data_init=2.0,
                                                 modifier_func=lambda v: v + 1)
    np.testing.assert_array_equal(rows, [1, 3])
    np.testing.assert_array_equal(fixed.asnumpy()[[1, 3]], 3.0)
    empty, _ = tu.rand_sparse_ndarray((4, 2), "row_sparse", density=0.0)
    assert empty.stype == "row_sparse" and not empty.asnumpy().any()
    csr, (indptr, indices, data) = tu.rand_sparse_ndarray((6, 10), "csr", density=0.25)
    assert csr.stype == "csr" and np.count_nonzero(csr.asnumpy()) == 15 and indptr.asnumpy()[-1] == 15
    power, (indptr, _, _) = tu.rand_sparse_ndarray((5, 16), "csr", density=0.5, distribution="powerlaw")
    np.testing.assert_array_equal(np.diff(indptr.asnumpy()), [2, 4, 8, 16, 10])  # doubling per row
    assert tu.rand_ndarray((3, 4), "csr", density=1.0).stype == "csr"
    zd = tu.create_sparse_array_zd((4, 3), "row_sparse", density=0.9, rsp_indices=[3, 0])
    np.testing.assert_array_equal(zd.indices.asnumpy(), [0, 3])
    with pytest.raises(ValueError, match="2-D"):
        tu.rand_sparse_ndarray((2, 2, 2), "csr", density=0.5)


def test_np_reduce_and_collapse_sum_like():
    x = np.random.rand(2, 3, 4)
    np.testing.assert_allclose(tu.np_reduce(x, (0, 2), True, np.sum), x.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(tu.np_reduce(x, None, False, np.max), x.max())
    np.testing.assert_allclose(tu.np_reduce(x, -1, False, np.sum), x.sum(axis=-1))
    np.testing.assert_allclose(tu.collapse_sum_like(x, (3, 1)), x.sum(axis=(0, 2)).reshape(3, 1))


def test_small_tensor_builders():
    np.testing.assert_array_equal(tu.create_2d_tensor(3, 2).asnumpy(), [[0, 0], [1, 1], [2, 2]])
    np.testing.assert_array_equal(tu.create_vector(4).asnumpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(tu.get_identity_mat(3).asnumpy(), np.eye(3))
    assert tu.get_identity_mat_batch(2).shape == (2, 2, 2)


# -- symbol checks -------------------------------------------------------------------------------

def test_check_symbolic_forward_and_backward():
    lhs, rhs = mx.sym.Variable("lhs"), mx.sym.Variable("rhs")
    a, b = np.random.rand(2, 3), np.random.rand(3, 4)
    outs = tu.check_symbolic_forward(mx.sym.dot(lhs, rhs), [a, b], [a @ b])
    np.testing.assert_allclose(outs[0].asnumpy(), a @ b, rtol=1e-5)
    dot = mx.sym.dot(lhs, rhs, name="d")
    tu.check_symbolic_forward(dot, {"lhs": a, "rhs": b}, {"d_output": a @ b})
    with pytest.raises(AssertionError, match="EXPECTED_.*FORWARD_"):
        tu.check_symbolic_forward(mx.sym.dot(lhs, rhs), [a, b], [a @ b + 1])
    with pytest.raises(ValueError, match="do not match"):
        tu.check_symbolic_forward(lhs * rhs, {"lhs": a}, [a])
    og = np.random.rand(2, 4)
    expected = [og @ b.T, a.T @ og]
    tu.check_symbolic_backward(mx.sym.dot(lhs, rhs), [a, b], [og], expected)
    tu.check_symbolic_backward(mx.sym.dot(lhs, rhs), [a, b], [og], expected, grad_req="add")
    grads = tu.check_symbolic_backward(mx.sym.dot(lhs, rhs), [a, b], [og], {"lhs": expected[0]},
                                       grad_req={"lhs": "write", "rhs": "null"})
    np.testing.assert_allclose(grads["lhs"].asnumpy(), expected[0], rtol=1e-5)
    with pytest.raises(AssertionError, match="BACKWARD_rhs"):
        tu.check_symbolic_backward(mx.sym.dot(lhs, rhs), [a, b], [og], [expected[0], expected[1] * 2])


def test_check_numeric_gradient_passes_on_correct_gradients():
    x = mx.sym.Variable("x")
    fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    tu.check_numeric_gradient(fc, [np.random.randn(2, 4), np.random.randn(3, 4), np.random.randn(3)])
    y = mx.sym.Variable("y")
    tu.check_numeric_gradient(mx.sym.sin(x) * y, {"x": np.random.randn(2, 3), "y": np.random.randn(2, 3)},
                              grad_nodes={"x": "add", "y": "null"})
    bn = mx.sym.BatchNorm(x, name="bn")
    tu.check_numeric_gradient(bn, [np.random.randn(3, 4), np.random.rand(4) + 0.5, np.random.randn(4)],
                              aux_states=[np.zeros(4), np.ones(4)], numeric_eps=1e-3, rtol=1e-2, atol=1e-3,
                              dtype=np.float64)


def test_check_numeric_gradient_catches_a_wrong_gradient():
    x = mx.sym.Variable("x")

    def wrong_sin_grad(ctx, attrs, ins, outs, aux):  # 2 cos(x) instead of cos(x)
        outs[0][...] = 2 * ins[0] * ctx.xp.cos(ins[1])

    op = mx.ops.get("_backward_sin")
    previous = mx.ops.override("_backward_sin", "cpu", wrong_sin_grad)
    try:
        with pytest.raises(AssertionError, match="NUMERICAL_x"):
            tu.check_numeric_gradient(mx.sym.sin(x), [np.random.rand(3, 2)])
    finally:
        if previous is None:
            del op.kernels["cpu"]
        else:
            op.kernels["cpu"] = previous
    tu.check_numeric_gradient(mx.sym.sin(x), [np.random.rand(3, 2)])


def test_numeric_grad_is_a_central_difference():
    x = mx.sym.Variable("x")
    exe = (x * x * x).bind(mx.cpu(), args={"x": mx.nd.zeros(3, dtype="float64")})
    grad = tu.numeric_grad(exe, {"x": np.array([1.0, 2.0, -1.0])}, eps=1e-3, dtype=np.float64)["x"]
    np.testing.assert_allclose(grad, 3 * np.array([1.0, 4.0, 1.0]), rtol=1e-6)
    np.testing.assert_array_equal(exe.arg_dict["x"].asnumpy(), [1.0, 2.0, -1.0])  # restored


def test_simple_forward():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    np.testing.assert_allclose(tu.simple_forward(x * 2 + y, x=np.ones(3), y=np.arange(3)), [2, 3, 4])
    outs = tu.simple_forward(mx.sym.Group([x + 1, x - 1]), x=np.zeros(2))
    assert len(outs) == 2 and (outs[0] == 1).all() and (outs[1] == -1).all()


def test_check_consistency_over_dtypes_and_available_contexts():
    x = mx.sym.Variable("x")
    fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    ctx_list = [{"ctx": mx.cpu(0), "x": (2, 4), "type_dict": {"x": np.float64}},
                {"ctx": mx.cpu(0), "x": (2, 4), "type_dict": {"x": np.float32}}]
    if mx.num_gpus() == 0:
        ctx_list.append({"ctx": mx.gpu(0), "x": (2, 4), "type_dict": {"x": np.float32}})
    gt = tu.check_consistency(fc, ctx_list)
    assert gt["fc_output"].dtype == np.float64 and set(gt) >= {"x", "fc_weight", "fc_bias"}
    # two symbols that differ are caught
    with pytest.raises(AssertionError):
        doubled = mx.sym.FullyConnected(x, mx.sym.Variable("fc_weight") * 2, num_hidden=3, name="fc")
        tu.check_consistency([fc, doubled], ctx_list[:2])
    with pytest.raises(ValueError, match="at least two"):
        tu.check_consistency(fc, ctx_list[:1])


# -- contexts, environment, misc -----------------------------------------------------------------

def test_default_context_and_set_default_context():
    assert tu.default_context() == mx.current_context()
    try:
        tu.set_default_context(mx.cpu(1))
        assert tu.default_context() == mx.cpu(1) and mx.nd.ones(1).context == mx.cpu(1)
        with mx.cpu(2):
            assert tu.default_context() == mx.cpu(2)
            tu.set_default_context(mx.cpu(3))
            assert tu.default_context() == mx.cpu(3)
        assert tu.default_context() == mx.cpu(1)  # a `with` block's change ends with it, as in MXNet
    finally:
        tu.set_default_context(mx.cpu(0))
    assert tu.default_context() == mx.cpu(0)
    with pytest.raises(TypeError):
        tu.set_default_context("cpu")


def test_environment_sets_and_restores():
    os.environ.pop("EMBER_TU_A", None)
    os.environ["EMBER_TU_B"] = "old"
    try:
        with tu.environment("EMBER_TU_A", "1"):
            assert os.environ["EMBER_TU_A"] == "1"
        assert "EMBER_TU_A" not in os.environ
        with pytest.raises(RuntimeError):
            with tu.environment({"EMBER_TU_A": "2", "EMBER_TU_B": None}):
                assert os.environ["EMBER_TU_A"] == "2" and "EMBER_TU_B" not in os.environ
                raise RuntimeError("body fails")
        assert "EMBER_TU_A" not in os.environ and os.environ["EMBER_TU_B"] == "old"
        with pytest.raises(TypeError):
            with tu.environment("EMBER_TU_A", 1):
                pass
    finally:
        os.environ.pop("EMBER_TU_B", None)


def test_retry_reruns_failing_tests():
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) == 2

    flaky()
    assert len(calls) == 2

    @tu.retry(2)
    def always_fails():
        raise AssertionError("no")

    with pytest.raises(AssertionError):
        always_fails()


def test_same_array_and_symbol_structure():
    a = mx.nd.zeros((2, 2))
    assert tu.same_array(a, a) and not tu.same_array(a, a.copy())
    x = mx.sym.Variable("x")
    assert tu.same_symbol_structure(mx.sym.relu(x), mx.sym.relu(mx.sym.Variable("y")))
    assert not tu.same_symbol_structure(mx.sym.relu(x), mx.sym.sigmoid(x))


def test_verify_generator_accepts_a_matching_and_rejects_a_wrong_distribution():
    import scipy.stats as ss
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: ss.norm.ppf(q, 0, 1), 5)
    assert len(buckets) == 5 and np.isclose(sum(probs), 1)
    tu.verify_generator(lambda n: mx.nd.random.normal(0, 1, shape=(n,)).asnumpy(), buckets, probs, nsamples=20000)
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda n: np.random.normal(0.5, 1, size=n), buckets, probs, nsamples=20000)
    assert tu.mean_check(lambda n: np.random.normal(2, 1, size=n), 2, 1, nsamples=20000)
    assert tu.var_check(lambda n: np.random.normal(0, 3, size=n), 3, nsamples=20000)


def test_compare_optimizer():
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9),
                         mx.optimizer.SGD(learning_rate=0.1, momentum=0.9), (3, 4), np.float32)
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.1), (3, 4),
                         np.float32, g_stype="row_sparse")
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1), mx.optimizer.SGD(learning_rate=0.2),
                             (3, 4), np.float32)


def test_use_np_runs_a_test_under_numpy_semantics():
    @tu.use_np
    def flags():
        return mx.is_np_array(), mx.is_np_shape()
    assert flags() == (True, True)


def test_check_gluon_hybridize_consistency_catches_a_difference():
    class Affine(mx.gluon.HybridBlock):
        def __init__(self, prefix=None, params=None):
            super().__init__(prefix=prefix, params=params)
            with self.name_scope():
                self.w = self.params.get("w", shape=(3,))

        def hybrid_forward(self, F, x, w):
            return F.np.tanh(x * w) + 1

    class Drifting(Affine):  # different outputs once hybridized: the check must fail
        def hybrid_forward(self, F, x, w):
            return super().hybrid_forward(F, x, w) + (0 if F is mx.nd else 1)

    @tu.use_np
    def check():
        x = mx.np.array([[0.5, -1.0, 2.0]])
        tu.check_gluon_hybridize_consistency(Affine, [x])
        with pytest.raises(AssertionError):
            tu.check_gluon_hybridize_consistency(Drifting, [x])
    check()


def test_download_copies_a_file_url(tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("hello")
    out = tu.download(src.as_uri(), dirname=str(tmp_path / "d"))
    assert open(out).read() == "hello" and out.endswith("src.txt")
    with pytest.raises(Exception):
        tu.download((tmp_path / "missing").as_uri(), fname=str(tmp_path / "x"), retries=1)


def test_public_as_mx_test_utils():
    assert mx.test_utils is tu
    from ember.test_utils import assert_almost_equal, check_consistency, environment  # noqa: F401


def test_check_symbolic_backward_ignores_extra_head_gradients():
    # MXNet's own prelu test passes one head gradient per input; its executor ignores the extras
    x = mx.sym.Variable("x")
    data = np.random.rand(2, 3)
    tu.check_symbolic_backward(x * 3, [data], [np.ones((2, 3)), np.ones(5)], [np.full((2, 3), 3.0)])


def test_failure_message_stays_short_for_big_arrays():
    a = np.zeros((3, 3, 4, 4))
    b = a.copy()
    b[2, 0, 2, 1] = 5
    with pytest.raises(AssertionError) as err:
        tu.assert_almost_equal(a, b)
    msg = str(err.value)
    assert "Location of maximum error: (2, 0, 2, 1), a=0.00000000, b=5.00000000" in msg
    assert "shape (3, 3, 4, 4) float64" in msg and len(msg.splitlines()) <= 6
