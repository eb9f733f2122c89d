"""The CPU thread team (ember.engine.cpu_team, native/thread_pool.h): BLAS's parallel regions run on
it with numpy's results, kernels give the same bits whatever the team's size, a fork child keeps
working, and the environment knobs behave."""
import multiprocessing as mp

import numpy as np
import pytest

import ember as mx
from ember.engine import cpu_team
from ember.engine._native import lib

pytest.importorskip("threadpoolctl")


def _numpy_openblas_has_callback() -> bool:
    from threadpoolctl import threadpool_info
    for info in threadpool_info():
        if info.get("internal_api") == "openblas" and "numpy" in info["filepath"]:
            return tuple(int(p) for p in info["version"].split(".")[:3]) >= (0, 3, 27)
    return False


needs_callback = pytest.mark.skipif(not _numpy_openblas_has_callback(),
                                    reason="numpy's BLAS is not OpenBLAS >= 0.3.27 (no threads callback)")


@pytest.fixture
def team_size():
    """Restores the team's size after a test changes it."""
    before = cpu_team.threads()
    yield
    cpu_team.set_threads(before)


@needs_callback
def test_numpy_blas_runs_on_the_team():
    assert any("numpy" in p for p in cpu_team.blas_libraries())
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((384, 512), np.float32), rng.standard_normal((512, 320), np.float32)
    before = lib.ember_pool_helper_jobs()
    got = a @ b
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    from threadpoolctl import threadpool_info
    blas_threads = max(i["num_threads"] for i in threadpool_info() if i.get("internal_api") == "openblas")
    if blas_threads > 1:  # OpenBLAS split the product: its second job ran on a helper
        assert lib.ember_pool_helper_jobs() > before


def test_set_threads_checks_its_argument(team_size):
    cpu_team.set_threads(3)
    assert cpu_team.threads() == 3
    for bad in (0, -2, 1.5, "2", True):
        with pytest.raises(ValueError, match="CPU thread count"):
            cpu_team.set_threads(bad)
    assert cpu_team.threads() == 3


def _kernels(x, w, g):
    """A few ops whose CPU kernels split their loops: conv (Winograd and im2col), BatchNorm, relu,
    max pooling, their gradients, and the SGD step."""
    xs, ws = mx.nd.array(x), mx.nd.array(w)
    gamma, beta = mx.nd.ones((w.shape[0],)), mx.nd.zeros((w.shape[0],))
    mean, var = mx.nd.zeros((w.shape[0],)), mx.nd.ones((w.shape[0],))
    for a in (xs, ws, gamma, beta):
        a.attach_grad()
    with mx.autograd.record():
        c3 = mx.nd.Convolution(xs, ws, kernel=(3, 3), pad=(1, 1), num_filter=w.shape[0], no_bias=True)
        c5 = mx.nd.Convolution(xs, mx.nd.tile(ws, (1, 1, 2, 2))[:, :, :5, :5], kernel=(5, 5), stride=(2, 2),
                               pad=(2, 2), num_filter=w.shape[0], no_bias=True)
        bn = mx.nd.BatchNorm(c3, gamma, beta, mean, var, fix_gamma=False)
        out = mx.nd.Pooling(mx.nd.relu(bn), kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")
        loss = (out * out).sum() + (c5 * c5).sum()
    loss.backward()
    wg = mx.nd.array(g)
    mx.nd.sgd_update(ws, wg, lr=0.1, wd=1e-4, rescale_grad=0.5, out=ws)
    return [a.asnumpy() for a in (out, c5, xs.grad, gamma.grad, beta.grad, ws)]


def _lstm(x):
    """A fused LSTM's forward and backward (its steps' kernels split rows)."""
    mx.random.seed(0)
    net = mx.gluon.rnn.LSTM(96, num_layers=1)
    net.initialize(mx.init.Xavier())
    xs = mx.nd.array(x)
    xs.attach_grad()
    with mx.autograd.record():
        y = net(xs)
    y.backward(mx.nd.ones_like(y))
    return [y.asnumpy(), xs.grad.asnumpy(), net.l0_h2h_weight.grad().asnumpy()]


def _softmax(x):
    """softmax and log_softmax over rows, and their gradients (rows split)."""
    xs = mx.nd.array(x)
    xs.attach_grad()
    with mx.autograd.record():
        y = mx.nd.softmax(xs)
        z = mx.nd.log_softmax(xs)
        loss = (y * y).sum() + (z * mx.nd.array(x)).sum()
    loss.backward()
    return [y.asnumpy(), z.asnumpy(), xs.grad.asnumpy()]


def test_kernels_same_bits_whatever_the_team(team_size):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 32, 16, 16)).astype(np.float32)
    w = (rng.standard_normal((48, 32, 3, 3)) * 0.1).astype(np.float32)
    g = rng.standard_normal(w.shape).astype(np.float32)
    seq = rng.standard_normal((5, 64, 32)).astype(np.float32)
    logits = rng.standard_normal((96, 1000)).astype(np.float32) * 4
    cpu_team.set_threads(1)
    serial = _kernels(x, w, g) + _lstm(seq) + _softmax(logits)
    cpu_team.set_threads(3)
    before = lib.ember_pool_helper_jobs()
    split = _kernels(x, w, g) + _lstm(seq) + _softmax(logits)
    assert lib.ember_pool_helper_jobs() > before  # the kernels did split
    for a, b in zip(serial, split):
        np.testing.assert_array_equal(a, b)


def _child(q):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((256, 256), np.float32)
    x = mx.nd.array(rng.standard_normal((4, 16, 32, 32)).astype(np.float32))
    y = mx.nd.relu(x).asnumpy()
    q.put((float(np.abs(a @ a - a.astype(np.float64) @ a).max()), bool((y == np.maximum(x.asnumpy(), 0)).all())))


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="no fork here")
def test_fork_child_starts_a_team_of_its_own():
    np.ones((256, 256), np.float32) @ np.ones((256, 256), np.float32)  # the parent's helpers exist
    mx.nd.relu(mx.nd.ones((4, 16, 64, 64))).wait_to_read()
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    err, same = q.get(timeout=60)
    p.join(timeout=60)
    assert p.exitcode == 0 and err < 1e-2 and same


CODE = """
from ember.engine import cpu_team, native
print(cpu_team.threads(), len(cpu_team.blas_libraries()), int(native.gemm_ready()))
"""


def test_environment_knobs(run_python):
    r = run_python(CODE, env={"EMBER_CPU_THREADS": "3", "OMP_NUM_THREADS": "5"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "3"
    r = run_python(CODE, env={"EMBER_CPU_THREADS": "", "OMP_NUM_THREADS": "5"})
    assert r.stdout.split()[0] == "5"
    with_team = run_python(CODE, env={"EMBER_CPU_THREADS": "", "OMP_NUM_THREADS": ""}).stdout.split()
    r = run_python(CODE, env={"EMBER_CPU_THREADS": "", "OMP_NUM_THREADS": "", "EMBER_CPU_TEAM": "0"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[1] == "0"  # OpenBLAS keeps its own pool
    assert r.stdout.split()[2] == with_team[2]  # the kernels keep numpy's sgemm
    for name, value in (("EMBER_CPU_THREADS", "many"), ("EMBER_CPU_THREADS", "0"), ("EMBER_CPU_SPIN_US", "-1")):
        r = run_python(CODE, env={name: value})
        assert r.returncode != 0 and name in r.stderr


def _wakes_after(fn):
    """How many sleeping helpers `fn()` woke through native.pool_prewake (helpers sleep at once)."""
    import time
    from ember.engine import native
    lib.ember_pool_set_spin_us(0)
    try:
        native.relu_f32(np.ones(1 << 20, np.float32), np.empty(1 << 20, np.float32))  # the helper exists
        time.sleep(0.02)  # and sleeps
        before = lib.ember_pool_nudged_wakes()
        fn()
        deadline = time.monotonic() + 10
        while lib.ember_pool_nudged_wakes() == before and time.monotonic() < deadline:
            time.sleep(0.001)
        return lib.ember_pool_nudged_wakes() - before
    finally:
        lib.ember_pool_set_spin_us(200)


def test_prewake_wakes_sleeping_helpers(team_size):
    from ember.engine import native
    cpu_team.set_threads(2)
    assert _wakes_after(native.pool_prewake) >= 1  # (every started helper: earlier tests may have made more)


def test_graphs_with_products_wake_the_team_first(team_size):
    """An executor or hybridized block holding an expensive op (FullyConnected) wakes the team before
    it runs, and so does autograd's backward over a tape holding one; elementwise graphs do not."""
    cpu_team.set_threads(2)
    x = mx.sym.Variable("x")
    dense = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    ex = dense.simple_bind(mx.cpu(), x=(2, 3))
    assert ex._wakes_team and not mx.sym.relu(x).simple_bind(mx.cpu(), x=(2, 3))._wakes_team
    assert _wakes_after(lambda: ex.forward(is_train=True)) >= 1
    assert _wakes_after(lambda: ex.backward(mx.nd.ones((2, 4)))) >= 1
    net = mx.gluon.nn.Dense(4)
    net.initialize()
    net.hybridize()
    data = mx.nd.ones((2, 3))
    net(data)
    assert _wakes_after(lambda: net(data)) >= 1
    with mx.autograd.record():
        out = net(data)
    assert out._ag.node.opdef.expensive
    assert _wakes_after(out.backward) >= 1
