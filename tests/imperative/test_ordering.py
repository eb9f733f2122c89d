"""Many interleaved writes through overlapping views, pushed without waits, end as in numpy."""
import threading

import numpy as np

import ember as mx


def test_interleaved_view_writes_are_ordered():
    rng = np.random.default_rng(1)
    ref = np.zeros((16, 8), np.float32)
    x = mx.nd.array(ref)
    views = {}
    for step in range(400):
        lo = int(rng.integers(0, 15))
        hi = int(rng.integers(lo + 1, 17))
        kind = step % 4
        v = views.setdefault((lo, hi), x[lo:hi])
        if kind == 0:
            v += float(step)
            ref[lo:hi] += step
        elif kind == 1:
            v *= 0.5
            ref[lo:hi] *= np.float32(0.5)
        elif kind == 2:
            v[:] = x[lo:hi] + 1.0  # reads and writes the same storage
            ref[lo:hi] = ref[lo:hi] + 1
        else:
            r = x.reshape((-1,))
            r[lo * 8:hi * 8] = float(-step)
            ref.reshape(-1)[lo * 8:hi * 8] = -step
    np.testing.assert_allclose(x.asnumpy(), ref, rtol=1e-6)


def test_reads_see_earlier_writes_and_not_later_ones():
    x = mx.nd.zeros((1000,))
    snapshots = []
    for i in range(50):
        x += 1.0
        snapshots.append(x.copy())
    for i, s in enumerate(snapshots):
        assert s.asnumpy()[0] == i + 1


def test_threads_pushing_on_disjoint_arrays():
    arrays = [mx.nd.zeros((64,)) for _ in range(8)]

    def work(a, k):
        for _ in range(50):
            a += k

    threads = [threading.Thread(target=work, args=(a, k + 1)) for k, a in enumerate(arrays)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, a in enumerate(arrays):
        np.testing.assert_array_equal(a.asnumpy(), np.full(64, 50 * (k + 1), np.float32))


def test_temporaries_freed_inside_a_bulk_group():
    # `x - 1.5` dies before the group is pushed: its storage release and var deletion must wait
    # for the group's ops on it (they are pushed first).
    x = mx.nd.array(np.arange(6.0))
    with mx.engine.bulk(8):
        y = mx.nd.relu(x - 1.5)
        z = (y * 2.0 + 1.0) - 0.5
    np.testing.assert_allclose(z.asnumpy(), np.maximum(np.arange(6.0) - 1.5, 0) * 2.0 + 0.5)


def test_temporary_collected_by_another_thread_inside_a_bulk_group():
    # A temporary only a reference cycle keeps, collected by a GC pass in another thread (an engine
    # worker running Python can start one) while this thread's group still holds its ops: its memory
    # must not go back (to be handed to the next array) before those ops are pushed.
    import gc
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with mx.engine.bulk(100):
            t = mx.nd.zeros((1000,))
            t += 1
            cycle = [t]
            cycle.append(cycle)
            del t, cycle
            collector = threading.Thread(target=gc.collect)
            collector.start()
            collector.join()
            b = mx.nd.ones((1000,)) * 5
            c = b + 1
        np.testing.assert_array_equal(b.asnumpy(), np.full(1000, 5, np.float32))
        np.testing.assert_array_equal(c.asnumpy(), np.full(1000, 6, np.float32))
        assert not mx.engine.core._held  # every hold was given back when the group was pushed
    finally:
        if was_enabled:
            gc.enable()
