"""mx.nd sub-namespaces and helpers MXNet code calls: contrib, linalg, random.multinomial/shuffle, eye,
load_frombuffer (values against numpy)."""
import numpy as np
import pytest

import ember as mx
from ember.base import FormatError

rng = np.random.default_rng(5)


def test_contrib_maps_to_contrib_ops():
    x = rng.standard_normal((3, 4))
    np.testing.assert_allclose(mx.nd.contrib.div_sqrt_dim(mx.nd.array(x, dtype="float64")).asnumpy(), x / 2.0)
    got = mx.nd.contrib.quadratic(mx.nd.array(x, dtype="float64"), a=2.0, b=-1.0, c=0.5).asnumpy()
    np.testing.assert_allclose(got, 2 * x * x - x + 0.5)
    assert "div_sqrt_dim" in dir(mx.nd.contrib) and "index_copy" in dir(mx.nd.contrib)
    with pytest.raises(AttributeError, match="_contrib_no_such_op"):
        mx.nd.contrib.no_such_op


def test_contrib_importable_as_module():
    from ember.ndarray import contrib, linalg
    assert contrib.quadratic is mx.nd.contrib.quadratic and linalg.gemm2 is mx.nd.linalg.gemm2


def test_linalg_gemm2_and_gemm_match_numpy():
    a, b, c = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 5)), rng.standard_normal((2, 3, 5))
    A, B, C = (mx.nd.array(v, dtype="float64") for v in (a, b, c))
    got = mx.nd.linalg.gemm2(A, B, transpose_a=True, alpha=0.5).asnumpy()
    np.testing.assert_allclose(got, 0.5 * np.swapaxes(a, 1, 2) @ b)
    got = mx.nd.linalg.gemm(A, B, C, transpose_a=True, alpha=2.0, beta=-1.0).asnumpy()
    np.testing.assert_allclose(got, 2.0 * np.swapaxes(a, 1, 2) @ b - c)
    spd = a[0].T @ a[0] + 3 * np.eye(3)
    L = mx.nd.linalg.potrf(mx.nd.array(spd, dtype="float64")).asnumpy()
    np.testing.assert_allclose(L, np.linalg.cholesky(spd), rtol=1e-10)
    assert {"gemm", "gemm2", "potrf", "trsm", "syrk", "inverse"} <= set(dir(mx.nd.linalg))


def test_linalg_names_as_mxnet_registers_them():
    # MXNet's operators are _linalg_* (linalg_* are aliases); mx.sym.linalg looks up _linalg_*
    assert mx.ops.get("_linalg_gemm2") is mx.ops.get("linalg_gemm2")
    a, b = mx.sym.var("a"), mx.sym.var("b")
    ex = mx.sym.linalg.gemm2(a, b).simple_bind(mx.cpu(), grad_req="null", a=(2, 3), b=(3, 4))
    av, bv = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    out = ex.forward(a=av, b=bv)[0].asnumpy()
    np.testing.assert_allclose(out, av @ bv, rtol=1e-5)


@pytest.mark.parametrize("N,M,k", [(3, 0, 0), (2, 4, 1), (4, 3, -2), (3, 3, 5)])
def test_eye_matches_numpy(N, M, k):
    got = mx.nd.eye(N, M, k)
    np.testing.assert_array_equal(got.asnumpy(), np.eye(N, M or N, k))
    assert got.dtype == np.float32


def test_eye_dtype_ctx_and_bad_size():
    e = mx.nd.eye(2, dtype="int32", ctx=mx.cpu(0))
    assert e.dtype == np.int32 and e.context == mx.cpu(0)
    with pytest.raises(mx.base.EmberError, match="N and M must be >= 0"):
        mx.nd.eye(-1)


def test_multinomial_draws_from_the_given_distributions():
    mx.random.seed(3)
    p = np.array([[0.0, 0.0, 1.0], [0.25, 0.75, 0.0]])
    draws = mx.nd.random.multinomial(mx.nd.array(p), shape=4000).asnumpy()
    assert draws.shape == (2, 4000) and draws.dtype == np.int32
    assert (draws[0] == 2).all()
    freq = np.bincount(draws[1], minlength=3) / 4000
    np.testing.assert_allclose(freq, p[1], atol=0.03)


def test_multinomial_get_prob_and_seed():
    p = np.array([0.1, 0.6, 0.3])
    mx.random.seed(9)
    idx, logp = mx.nd.random.multinomial(mx.nd.array(p, dtype="float64"), shape=(5,), get_prob=True)
    np.testing.assert_allclose(logp.asnumpy(), np.log(p[idx.asnumpy()]))
    mx.random.seed(9)
    again = mx.nd.random.multinomial(mx.nd.array(p, dtype="float64"), shape=(5,))
    np.testing.assert_array_equal(again.asnumpy(), idx.asnumpy())
    with pytest.raises(TypeError, match="multinomial: data must be an NDArray"):
        mx.nd.random.multinomial([0.5, 0.5])


def test_shuffle_permutes_the_first_axis():
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    mx.random.seed(1)
    y = mx.nd.random.shuffle(mx.nd.array(x)).asnumpy()
    assert sorted(map(tuple, y)) == sorted(map(tuple, x))
    assert not np.array_equal(y, x)  # 8! orders: a fixed seed that keeps the order would be a bug
    mx.random.seed(1)
    np.testing.assert_array_equal(mx.nd.random.shuffle(mx.nd.array(x)).asnumpy(), y)
    with pytest.raises(TypeError, match="shuffle: data must be an NDArray"):
        mx.nd.random.shuffle(x)


def test_load_frombuffer_round_trip_and_corrupt(tmp_path):
    data = {"w": mx.nd.array(rng.standard_normal((2, 3))), "b": mx.nd.array([1, 2], dtype="int32")}
    path = str(tmp_path / "x.params")
    mx.nd.save(path, data)
    buf = open(path, "rb").read()
    got = mx.nd.load_frombuffer(buf)
    assert set(got) == {"w", "b"}
    np.testing.assert_array_equal(got["w"].asnumpy(), data["w"].asnumpy())
    assert got["b"].dtype == np.int32
    with pytest.raises(FormatError):
        mx.nd.load_frombuffer(buf[: len(buf) // 2])


# -- mx.nd.contrib control flow (outputs and structures checked against MXNet 1.9.1 by hand) ---------
def test_foreach_cumulative_sum_and_structures():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    outs, states = mx.nd.contrib.foreach(lambda d, s: (d * 2, [s[0] + d]), mx.nd.array(x), [mx.nd.zeros((3,))])
    np.testing.assert_array_equal(outs.asnumpy(), 2 * x)
    np.testing.assert_array_equal(states[0].asnumpy(), x.sum(0))
    outs, state = mx.nd.contrib.foreach(lambda d, s: ([d[0], d[1] + s], s + 1), [mx.nd.array(x), mx.nd.array(-x)],
                                        mx.nd.zeros((3,)))
    assert isinstance(outs, list) and len(outs) == 2
    np.testing.assert_array_equal(outs[1].asnumpy(), -x + np.arange(4)[:, None])
    np.testing.assert_array_equal(state.asnumpy(), np.full(3, 4.0))


def test_foreach_is_differentiable():
    w0 = rng.standard_normal((3,))
    x0 = rng.standard_normal((5, 3))
    w = mx.nd.array(w0, dtype="float64")
    w.attach_grad()
    def step(d, states):  # h_t = tanh(x_t + w * h_{t-1}); loss = sum of all h
        h = mx.nd.tanh(d + w * states[0])
        return h, [h]

    with mx.autograd.record():
        outs, _ = mx.nd.contrib.foreach(step, mx.nd.array(x0, dtype="float64"), [mx.nd.zeros((3,), dtype="float64")])
        loss = outs.sum()
    loss.backward()

    def f(wv):
        h, total = np.zeros(3), 0.0
        for t in range(5):
            h = np.tanh(x0[t] + wv * h)
            total += h.sum()
        return total
    eps = 1e-6
    num = np.array([(f(w0 + eps * e) - f(w0 - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(w.grad.asnumpy(), num, rtol=1e-5)


def test_while_loop_pads_to_max_iterations():
    out, (i, s) = mx.nd.contrib.while_loop(lambda i, s: i <= 5, lambda i, s: (i * 10, (i + 1, s + i)),
                                           [mx.nd.array([1]), mx.nd.array([0])], max_iterations=8)
    np.testing.assert_array_equal(out.asnumpy().ravel(), [10, 20, 30, 40, 50, 0, 0, 0])
    assert i.asscalar() == 6 and s.asscalar() == 15
    outs, v = mx.nd.contrib.while_loop(lambda i: i < 3, lambda i: ([i, i * 2], i + 1), mx.nd.array([0]),
                                       max_iterations=3)
    assert isinstance(v, mx.nd.NDArray) and len(outs) == 2
    np.testing.assert_array_equal(outs[1].asnumpy().ravel(), [0, 2, 4])


def test_control_flow_errors():
    with pytest.raises(ValueError, match="max_iterations should be specified"):
        mx.nd.contrib.while_loop(lambda i: i < 3, lambda i: (i, i + 1), mx.nd.array([0]))
    with pytest.raises(ValueError, match="returned 1 loop variables, expected 2"):
        mx.nd.contrib.while_loop(lambda i, s: i < 3, lambda i, s: (i, [i + 1]), [mx.nd.array([0]), mx.nd.array([0])],
                                 max_iterations=4)
    with pytest.raises(ValueError, match="scalar"):
        mx.nd.contrib.while_loop(lambda i: i < 3, lambda i: (i, i + 1), mx.nd.array([0, 1]), max_iterations=4)
    with pytest.raises(TypeError, match="foreach data must be NDArrays"):
        mx.nd.contrib.foreach(lambda d, s: (d, s), np.zeros(3), [])
    with pytest.raises(ValueError, match="same length on axis 0"):
        mx.nd.contrib.foreach(lambda d, s: (d[0], s), [mx.nd.zeros((2, 1)), mx.nd.zeros((3, 1))], [])
    assert mx.nd.contrib.cond(mx.nd.array([0]), lambda: "then", lambda: "else") == "else"
    assert mx.nd.contrib.cond(mx.nd.array([2]), lambda: "then", lambda: "else") == "then"
