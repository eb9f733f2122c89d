"""One process of the distributed kvstore tests (run under mpiexec by test_dist.py).

usage: python _dist_worker.py SCENARIO OUT_DIR [STEPS]
Writes OUT_DIR/rank<r>.npz with the final weights; prints 'EMBER-KV-ERROR <type>: <msg>' on
kvstore errors and exits 3."""
from __future__ import annotations

import os
import sys

import numpy as np

import ember
from ember import engine
from ember.kvstore import KVStoreError, create, jobdir

SHAPES = {"small_a": (3, 4), "small_b": (7,), "mid": (5, 5), "big": (64, 1000)}  # str keys only: MXNet refuses mixing int and str
LR = 0.05


def gradient(key, rank, step):
    """Deterministic per-(key, rank, step) gradient, reproducible by the single-process reference."""
    seed = (hash_key(key) * 1000 + rank * 100 + step) % (2 ** 32)
    return np.random.default_rng(seed).standard_normal(SHAPES[key]).astype(np.float32)


def hash_key(key):
    return key if isinstance(key, int) else sum(map(ord, key))


def initial(key, rank):
    return np.random.default_rng(hash_key(key) + 7919 * rank).standard_normal(SHAPES[key]).astype(np.float32)


def sgd(key, grad, weight):
    def step():
        weight._data[...] -= LR * grad._data
    engine.push(step, read=[grad.var], write=[weight.var], name="sgd")


ASYNC_LR = 0.1


def async_sgd(key, grad, weight):
    """The servers' updater for the async test (same rule as mx.optimizer.SGD without wd)."""
    def step():
        weight._data[...] -= ASYNC_LR * grad._data
    engine.push(step, read=[grad.var], write=[weight.var], name="async_sgd")


def run_sync(nd, kv, rank, steps, out_dir, ndev=2):
    keys = list(SHAPES)
    kv.init(keys, [nd.array(initial(k, rank)) for k in keys])  # rank 0's values win
    if os.environ.get("KV_TEST_PREPUSH") == "1":
        # without an updater a push replaces the value with the sum over workers
        kv.push(keys, [nd.array(initial(k, rank + 1)) for k in keys])
    if os.environ.get("KV_TEST_OPTIMIZER") == "1":
        from ember import optimizer
        kv.set_optimizer(optimizer.create("sgd", learning_rate=LR))  # rescale_grad=1, wd=0
    else:
        kv.set_updater(sgd)
    outs = [nd.zeros(SHAPES[k]) for k in keys]
    for step in range(steps):
        # two "devices" per worker, each holding half of this worker's gradient
        grads = [[nd.array(gradient(k, rank, step) / ndev, ctx=ember.cpu(d)) for d in range(ndev)] for k in keys]
        kv.push(keys, grads, priority=-step)
        kv.pull(keys, out=outs, priority=-step)
    kv.barrier()
    np.savez(os.path.join(out_dir, f"rank{rank}.npz"), **{str(k): o.asnumpy() for k, o in zip(keys, outs)})


def run_async(nd, kv, rank, steps, out_dir):
    """Workers fit y = X w_true by SGD through the servers; rank r sees its own data shard."""
    rng = np.random.default_rng(42)
    w_true = rng.standard_normal((10,)).astype(np.float32)
    X = np.random.default_rng(100 + rank).standard_normal((256, 10)).astype(np.float32)
    y = X @ w_true
    kv.init("w", nd.zeros((10,)))
    if os.environ.get("KV_TEST_OPTIMIZER") == "1":
        from ember import optimizer
        kv.set_optimizer(optimizer.create("sgd", learning_rate=ASYNC_LR))
    else:
        import _dist_worker  # by module name, so the servers can unpickle it (PYTHONPATH has this dir)
        kv.set_updater(_dist_worker.async_sgd)
    w = nd.zeros((10,))
    fail_step = int(os.environ.get("KV_TEST_FAIL_STEP", "-1")) if rank == 1 else -1
    for step in range(steps):
        kv.pull("w", out=w)
        wv = w.asnumpy()
        grad = nd.array(X.T @ (X @ wv - y) / len(X) / kv.num_workers)
        if step == fail_step:
            # A gradient that failed: its push is skipped and the pull after it raises its error;
            # a fresh push clears the key and training goes on (no hang, nothing else lost).
            def broken():
                raise ValueError("the gradient of 'w' could not be computed")
            engine.push(broken, write=[grad.var], name="broken_gradient")
            kv.push("w", grad)
            kv.pull("w", out=w)
            try:
                w.asnumpy()
            except ValueError as e:
                with open(os.path.join(out_dir, "async_failed.txt"), "w") as f:
                    f.write(f"{type(e).__name__}: {e}")
            grad = nd.zeros((10,))
        kv.push("w", grad)
    # every worker's pushes issued before the final pull: a worker that ran ahead (a loaded machine)
    # would otherwise read a model missing the other's last updates, which async training allows
    kv.barrier()
    kv.pull("w", out=w)
    final = w.asnumpy()
    if os.environ.get("KV_TEST_OPTIMIZER") == "1":  # optimizer states live on the servers
        kv.barrier()
        path = os.path.join(out_dir, f"states{rank}")
        kv.save_optimizer_states(path)
        kv.load_optimizer_states(path)
        with open(path, "rb") as f:
            from ember.optimizer import state_file
            parts = state_file.loads_parts(f.read())
        assert len(parts) == 1 and len(parts[0]) > 0, parts
    np.savez(os.path.join(out_dir, f"rank{rank}.npz"), w=final, w_true=w_true)


def run_pushpull(nd, kv, rank, out_dir):
    """pushpull into the values, into separate outputs (one float64) and with an updater; after each,
    the outputs are overwritten and the keys pulled again: the store must still hold the sums."""
    keys = list(SHAPES)
    kv.init(keys, [nd.zeros(SHAPES[k]) for k in keys])
    saved = {}
    vals = [nd.array(gradient(k, rank, 0)) for k in keys]
    kv.pushpull(keys, vals)  # out=None: the sums land in vals
    saved.update({f"inplace_{k}": v.asnumpy() for k, v in zip(keys, vals)})
    for v in vals:
        v[:] = -1.0  # the caller reuses its buffers; the store must not follow
    outs = [nd.zeros(SHAPES[k]) for k in keys]
    kv.pull(keys, out=outs)
    saved.update({f"inplace_pull_{k}": o.asnumpy() for k, o in zip(keys, outs)})

    vals = [nd.array(gradient(k, rank, 1)) for k in keys]
    outs = [nd.zeros(SHAPES[k], dtype="float64" if k == "big" else "float32") for k in keys]
    kv.pushpull(keys, vals, out=outs)
    saved.update({f"out_{k}": o.asnumpy() for k, o in zip(keys, outs)})
    saved.update({f"out_value_{k}": v.asnumpy() for k, v in zip(keys, vals)})  # must be unchanged
    for o in outs:
        o[:] = 7.0
    again = [nd.zeros(SHAPES[k]) for k in keys]
    kv.pull(keys, out=again)
    saved.update({f"out_pull_{k}": o.asnumpy() for k, o in zip(keys, again)})

    vals = [nd.array(gradient(k, rank, 3)) for k in keys]
    for k, v in zip(keys, vals):  # one call per key, as Gluon's Trainer makes them
        kv.pushpull(k, v)
    saved.update({f"perkey_{k}": v.asnumpy() for k, v in zip(keys, vals)})
    for k, v in zip(keys, vals):
        v[:] = 3.0
        kv.push(k, v)  # single-key push: the store holds the sum of the 3.0s
    kv.pull(keys, out=again)
    saved.update({f"perkey_push_{k}": o.asnumpy() for k, o in zip(keys, again)})
    for k in keys:  # back to the step-1 sums the updater test starts from
        kv.pushpull(k, nd.array(gradient(k, rank, 1)), out=again[keys.index(k)])

    kv.set_updater(sgd)  # the updater path: the stored weight (the last sum) minus LR * sum
    grads = [nd.array(gradient(k, rank, 2)) for k in keys]
    kv.pushpull(keys, grads, out=again)
    saved.update({f"updated_{k}": o.asnumpy() for k, o in zip(keys, again)})
    # a dtype MPI cannot sum is refused at the call, and the store keeps working
    kv.init("flags", nd.array(np.ones(3), dtype="bool"))
    try:
        kv.pushpull("flags", nd.array(np.ones(3), dtype="bool"))
        saved["bool_error"] = np.array("")
    except KVStoreError as e:
        saved["bool_error"] = np.array(str(e))
    after = nd.zeros(SHAPES[keys[0]])
    kv.pushpull(keys[0], nd.array(np.ones(SHAPES[keys[0]])), out=after)
    saved["after_bool"] = after.asnumpy()
    kv.barrier()
    saved["max_in_flight"] = np.array(kv._comm._max_in_flight)
    # -1: the store runs without the native queue (EMBER_KVSTORE_NATIVE=0)
    saved["native_max_in_flight"] = np.array(kv._native.max_in_flight if kv._native is not None else -1)
    np.savez(os.path.join(out_dir, f"rank{rank}.npz"), **saved)


def run_replay(nd, kv, rank, out_dir):
    """The same list calls with the same arrays, step after step (they are replayed from memory),
    refilled in place, with another call re-homing some keys into a different fusion buffer in
    between: every result must still be the sum of the arrays' current values."""
    keys = list(SHAPES)
    kv.init(keys, [nd.zeros(SHAPES[k]) for k in keys])
    vals = [nd.zeros(SHAPES[k]) for k in keys]
    outs = [nd.zeros(SHAPES[k]) for k in keys]
    hits = []
    replayed = kv._replayed

    def counting(*args):
        hits.append(replayed(*args))
        return hits[-1]
    kv._replayed = counting
    saved = {}
    for step in range(4):  # calls are kept from their second time (step 1), replayed from step 2
        for k, v in zip(keys, vals):
            v[:] = nd.array(gradient(k, rank, step))
        if step == 2:  # keys 1 and 2 move into another fusion buffer, holding other sums
            kv.push(keys[1:3], [nd.array(np.full(SHAPES[k], 1.0)) for k in keys[1:3]])
        kv.push(keys, vals)
        kv.pull(keys, out=outs)
        saved.update({f"push{step}_{k}": o.asnumpy() for k, o in zip(keys, outs)})
        kv.pushpull(keys, vals, out=outs)
        saved.update({f"out{step}_{k}": o.asnumpy() for k, o in zip(keys, outs)})
        kv.pushpull(keys, vals)
        saved.update({f"inplace{step}_{k}": v.asnumpy() for k, v in zip(keys, vals)})
    saved["replays"] = np.array(sum(hits))
    np.savez(os.path.join(out_dir, f"rank{rank}.npz"), **saved)


def os_threads(settle: float = 0.0):
    """Threads of this process, C threads included (the native queue's thread is not a Python one);
    the fewest seen over `settle` seconds (a joined thread may take a moment to leave the list)."""
    import time
    fewest = len(os.listdir("/proc/self/task"))
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline:
        time.sleep(0.05)
        fewest = min(fewest, len(os.listdir("/proc/self/task")))
    return fewest


def run_close(nd, kv, rank, out_dir):
    """close() finishes the store's work and frees its threads and communicators; many stores in turn."""
    kv.init("w", nd.zeros((8,)))
    kv.push("w", nd.array(np.full(8, rank + 1.0)))
    out = nd.zeros((8,))
    kv.pull("w", out=out)
    kv.close()  # the push above may still be in flight: close waits for it
    kv.close()  # twice is harmless
    try:
        kv.push("w", nd.array(np.ones(8)))
        refused = ""
    except KVStoreError as e:
        refused = str(e)
    threads_before = None
    for i in range(20):
        if i == 1:  # after one store: threads started once per process (MPI's, the engine's) exist
            threads_before = os_threads(settle=1.0)
        other = create("dist_sync")
        other.init(i, nd.zeros((4,)))
        other.push(i, nd.array(np.full(4, float(rank))))  # one key, no updater: the native queue
        other.close()
    np.savez(os.path.join(out_dir, f"rank{rank}.npz"), out=out.asnumpy(), refused=np.array(refused),
             threads_before=threads_before, threads_after=os_threads(settle=1.0), native=kv._native is None)


def run_bad_value(nd, kv, rank, out_dir):
    """Rank 1 pushes a value whose computation failed: it gets that error back, its later pushes
    fail with a clear error instead of hanging, and rank 0 learns that rank 1 failed."""
    kv.init([0, 1], [nd.zeros((4,)), nd.zeros((4,))])
    value = nd.array(np.ones(4))
    if rank == 1:
        def broken():
            raise ValueError("the gradient of key 0 could not be computed")
        engine.push(broken, write=[value.var], name="broken_gradient")
    kv.push(0, value)
    kv.push(1, nd.array(np.ones(4)))
    out = nd.zeros((4,))
    if rank == 1:
        kv.pull(1, out=out)
        try:
            out.asnumpy()
        except KVStoreError as e:  # key 1 came after the failed key 0: it cannot be matched
            with open(os.path.join(out_dir, "later1.txt"), "w") as f:
                f.write(f"{type(e).__name__}: {e}")
        kv.pull(0, out=out)
        out.asnumpy()  # raises the ValueError: this process ends with it
    else:
        kv.pull(1, out=out)
        out.asnumpy()


def run_bulk(nd, kv, rank, out_dir):
    """Values computed, pushed and pulled inside an engine bulk group: the native allreduce and the
    native pull must see the ops the group still holds (per key, fused, and pushpull)."""
    kv.init([0, 1, 2], [nd.zeros((1000,)), nd.zeros((8,)), nd.zeros((8,))])
    outs = {}
    with engine.bulk(64):
        big = nd.ones((1000,)) * (rank + 1)
        kv.push(0, big)  # alone: the native per-key path
        outs[0] = nd.zeros((1000,))
        kv.pull(0, out=outs[0])
        small = [nd.ones((8,)) * (rank + 1), nd.ones((8,)) * (rank + 10)]
        kv.push([1, 2], small)  # fused
        outs[1], outs[2] = nd.zeros((8,)), nd.zeros((8,))
        kv.pull([1, 2], out=[outs[1], outs[2]])
        value = nd.ones((1000,)) * (rank + 100)
        kv.pushpull(0, value)
    np.savez(os.path.join(out_dir, f"rank{rank}.npz"), **{f"k{k}": o.asnumpy() for k, o in outs.items()},
             pushpull=value.asnumpy())


def main():
    scenario, out_dir = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    nd = ember.nd
    if scenario == "die_before_init" and jobdir.launcher_rank() == "1":
        os._exit(7)  # a rank that fails before MPI starts (bad import, missing file...)
    try:
        if scenario == "die_before_init":
            kv = create("dist_sync")
            kv.init(0, nd.zeros((2,)))
            return
        if scenario == "async":
            kv = create("dist_async")
            run_async(nd, kv, kv.rank, steps, out_dir)
            return
        if scenario == "async_server_dies":  # train until the test kills the server
            import time
            kv = create("dist_async")
            import _dist_worker
            kv.init("w", nd.zeros((4,)))
            kv.set_updater(_dist_worker.async_sgd)
            open(os.path.join(out_dir, f"ready{kv.rank}"), "w").close()
            w = nd.zeros((4,))
            deadline = time.time() + 60
            while time.time() < deadline:
                kv.push("w", nd.array(np.ones(4)))
                kv.pull("w", out=w)
                w.asnumpy()
                time.sleep(0.01)
            return
        if scenario == "async_die":  # every worker dies without saying goodbye
            kv = create("dist_async")
            kv.init("w", nd.zeros((4,)))
            os.kill(os.getpid(), 9)
        kv = create("dist_sync")
        rank = kv.rank
        if scenario == "sync":
            run_sync(nd, kv, rank, steps, out_dir)
            # the path that carried the pushes: the native queue, or the Python communication thread
            most = kv._native.max_in_flight if kv._native is not None else kv._comm._max_in_flight
            np.save(os.path.join(out_dir, f"max_in_flight{rank}.npy"), np.array(most))
        elif scenario == "pushpull":
            run_pushpull(nd, kv, rank, out_dir)
        elif scenario == "close":
            run_close(nd, kv, rank, out_dir)
        elif scenario == "bad_value":
            run_bad_value(nd, kv, rank, out_dir)
        elif scenario == "replay":
            run_replay(nd, kv, rank, out_dir)
        elif scenario == "bulk":
            run_bulk(nd, kv, rank, out_dir)
        elif scenario == "mismatch":
            kv.init(0, nd.zeros((2, 3) if rank == 0 else (3, 2)))
        elif scenario == "diverge":  # same shapes, different keys in one fused push
            kv.init([0, 1, 2], [nd.zeros((3,)) for _ in range(3)])
            kv.push([0, 1 if rank == 0 else 2], [nd.array(np.ones(3)), nd.array(np.ones(3))])
            out = nd.zeros((3,))
            kv.pull(0, out=out)
            out.asnumpy()
        elif scenario == "die":
            kv.init(0, nd.zeros((100,)))
            for step in range(1000):
                if rank == 1 and step == 3:
                    os.kill(os.getpid(), 9)  # a worker dies mid-training
                kv.push(0, nd.array(np.ones(100)))
                out = nd.zeros((100,))
                kv.pull(0, out=out)
                out.asnumpy()
        else:
            raise SystemExit(f"unknown scenario {scenario}")
    except KVStoreError as e:
        message = f"EMBER-KV-ERROR {type(e).__name__}: {e}"
        with open(os.path.join(out_dir, f"error{jobdir.launcher_rank()}.txt"), "w") as f:
            f.write(message)
        print(message, flush=True)
        sys.exit(3)


if __name__ == "__main__":
    main()
