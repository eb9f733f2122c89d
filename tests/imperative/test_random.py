"""The RNG resource: draws follow push order, so a seed fixes the numbers whatever the threads do."""
import threading

import numpy as np
import pytest

import ember as mx
from ember.imperative import resources

N_THREADS, PER_THREAD = 8, 25


def _draw(shape=(4,)):
    return mx.nd._test_imperative_uniform(shape=shape)


def _sequential(seed, n):
    mx.random.seed(seed)
    return [_draw().asnumpy() for _ in range(n)]


def test_same_seed_same_numbers_and_push_order_is_draw_order():
    a = _sequential(7, 10)
    b = _sequential(7, 10)
    c = _sequential(8, 10)
    np.testing.assert_array_equal(np.stack(a), np.stack(b))
    assert not np.array_equal(np.stack(a), np.stack(c))
    # one generator per device, drawn in push order: equal to drawing the whole stream at once
    mx.random.seed(7)
    whole = _draw((40,)).asnumpy()
    np.testing.assert_array_equal(np.concatenate(a), whole)


def test_eight_threads_pushing_random_ops_draw_the_seeded_stream():
    reference = np.stack(_sequential(123, N_THREADS * PER_THREAD))
    mx.random.seed(123)
    lock = threading.Lock()
    order = []  # (push position, array): the lock makes the push order observable, not the run order
    start = threading.Barrier(N_THREADS)

    def worker():
        start.wait()
        for _ in range(PER_THREAD):
            with lock:
                order.append(_draw())

    threads = [threading.Thread(target=worker) for _ in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = np.stack([a.asnumpy() for a in order])
    np.testing.assert_array_equal(got, reference)


def test_unsynchronised_threads_draw_a_permutation_of_the_seeded_stream():
    reference = np.stack(_sequential(5, N_THREADS * PER_THREAD))
    mx.random.seed(5)
    results = [[] for _ in range(N_THREADS)]

    def worker(out):
        for _ in range(PER_THREAD):
            out.append(_draw())

    threads = [threading.Thread(target=worker, args=(r,)) for r in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = np.stack([a.asnumpy() for r in results for a in r])
    # each op drew one whole block of 4 consecutive numbers of the stream: no interleaved draws
    key = lambda rows: sorted(map(tuple, rows))  # noqa: E731
    assert key(got) == key(reference)


def test_seed_is_ordered_after_pending_draws():
    mx.random.seed(1)
    first = _draw()
    mx.random.seed(1)  # pushed after `first`: must not change what `first` drew
    second = _draw()
    np.testing.assert_array_equal(first.asnumpy(), second.asnumpy())


def test_rng_resource_is_one_var_and_generator_per_device():
    v1, g1 = resources.rng(mx.cpu(0))
    v2, g2 = resources.rng(mx.cpu(1))
    assert v1 is v2 and g1 is g2
    assert isinstance(g1, np.random.Generator)


def test_seed_rejects_non_integers():
    with pytest.raises(ValueError, match="int"):
        mx.random.seed(1.5)
    with pytest.raises(ValueError, match="Context"):
        mx.random.seed(1, ctx="gpu")


def test_registry_random_ops_when_present():
    mx.random.seed(3)
    a = mx.nd.random.uniform(-1, 1, shape=(50,)).asnumpy()
    mx.random.seed(3)
    b = mx.random.uniform(-1, 1, shape=(50,)).asnumpy()
    np.testing.assert_array_equal(a, b)
    assert a.min() >= -1 and a.max() < 1
    n = mx.nd.random.normal(2.0, 0.5, shape=(2000,)).asnumpy()
    assert abs(n.mean() - 2.0) < 0.1 and abs(n.std() - 0.5) < 0.1
    r = mx.nd.random.randint(0, 5, shape=(100,)).asnumpy()
    assert r.min() >= 0 and r.max() < 5


def test_sampling_wrappers_shapes_and_moments():
    assert mx.nd.random.uniform().shape == (1,)  # MXNet 1.x: one value when no shape is given
    assert mx.nd.random.randn(2, 3).shape == (2, 3)
    e = mx.nd.random.exponential(2.0, shape=(4000,)).asnumpy()
    assert abs(e.mean() - 2.0) < 0.2
    g = mx.nd.random.gamma(2.0, 3.0, shape=(4000,)).asnumpy()
    assert abs(g.mean() - 6.0) < 0.5
    p = mx.random.poisson(4.0, shape=(4000,)).asnumpy()
    assert abs(p.mean() - 4.0) < 0.3
    assert mx.nd.random.uniform(shape=(2,), ctx=mx.cpu(1)).context == mx.cpu(1)


def test_unseeded_processes_draw_the_same_stream():
    # MXNet seeds every process with the same default, so runs repeat without mx.random.seed.
    import subprocess
    import sys
    code = "import ember as mx; print(mx.nd.random.uniform(shape=(4,)).asnumpy().tolist())"
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
            for _ in range(2)]
    assert all(o.returncode == 0 for o in outs), outs[0].stderr
    assert outs[0].stdout == outs[1].stdout and outs[0].stdout.strip()


def test_a_failed_draw_fails_later_draws_until_raised_once():
    # as MXNet's random resource: a draw reads and writes the generator, so the next draws inherit
    # the first one's error; raising it once (here, at a later array's wait) clears it for all
    mx.nd.waitall()
    bad = mx.nd.random.normal(0, -1, (2, 2))
    later = mx.nd.random.normal(0, 1, (2, 2))
    c = mx.nd.dot(later, bad)
    with pytest.raises(mx.base.MXNetError, match="scale must be >= 0"):
        c.asnumpy()
    mx.nd.waitall()  # nothing left to raise: the one error was raised
    assert mx.nd.random.normal(0, 1, (3,)).asnumpy().shape == (3,)
