"""`DataLoader`: mini-batches from a Dataset, in the loop's process, in worker processes or in threads.

Worker processes (num_workers > 0) are forked when an iteration starts (so they see the dataset as
it is then, without pickling it) and end with it.  Batch k is made by worker k % num_workers; each
worker answers in the order it was asked, so batches reach the loop in sampler order without a
reorder buffer.  A batch's arrays travel through shared memory (`_shm.py`; a worker reuses a file
once the loop holds no array over it); the pipe carries only their description.  The loop waits
on a worker's pipe and its process sentinel together, so a worker that dies is reported at once
and a slow one after `timeout` seconds; a worker's exception is raised in the loop, chained to
the worker's traceback.  Workers ignore SIGINT (Ctrl-C stops the loop, which then ends them), die
with their parent (PR_SET_PDEATHSIG), and are ended when the iteration finishes, is abandoned,
fails, or the interpreter exits.
"""
from __future__ import annotations

import atexit
import collections
import concurrent.futures
import itertools
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import traceback
import weakref
from typing import Any, Callable, List, Optional

import numpy as np

from ... import context
from ...imperative.copying import stack_settled
from ...imperative.ndarray import NDArray
from ...util import is_np_array, is_np_shape, set_np
from . import _shm
from . import sampler as _sampler

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]


def default_batchify_fn(data: List[Any]):
    """Stack a list of samples into a batch: NDArrays with nd.stack, tuples element-wise (a list
    of batches), anything else through numpy.asarray into an NDArray of the same dtype.  Under
    NumPy array semantics (or for mx.np samples) the batch is an mx.np.ndarray, as MXNet's."""
    from ... import ndarray as nd
    first = data[0]
    if isinstance(first, NDArray):
        out = stack_settled(data)  # samples made in this thread, nothing pending on them: stacked now
        if out is None:
            out = nd.stack(*data)
        return out.as_np_ndarray() if type(first).__name__ == "ndarray" or is_np_array() else out
    if isinstance(first, tuple):
        return [default_batchify_fn(list(items)) for items in zip(*data)]
    arr = np.asarray(data)
    out = nd.array(arr, dtype=arr.dtype)
    return out.as_np_ndarray() if is_np_array() else out


def _as_np_batch(batch):
    """A batch's dense NDArrays as mx.np.ndarrays (batches made where NumPy array semantics was off)."""
    if type(batch) is NDArray:
        return batch.as_np_ndarray()
    if isinstance(batch, (list, tuple)):
        return type(batch)(_as_np_batch(b) for b in batch)
    return batch


# Worker processes hand their batches over through shared memory whatever the batchify function
# makes, so the multi-worker default is the same function (MXNet's name, kept for user code).
default_mp_batchify_fn = default_batchify_fn


def _default_batch_in_place(data: List[Any]):
    """What default_batchify_fn(data) makes, with its arrays left as `_shm.PendingArray`s that a
    worker stacks straight into the batch's shared-memory file; None where default_batchify_fn must
    run itself (samples of mixed types, shapes or dtypes, sparse arrays, non-numeric values: its
    result or its error is the reference)."""
    first = data[0]
    if isinstance(first, NDArray):
        kind, shape, dtype = type(first), first.shape, first.dtype
        if first.stype != "default":
            return None
        parts = []
        for d in data:
            if type(d) is not kind or d.shape != shape or d.dtype != dtype or d.stype != "default":
                return None
            parts.append(_shm.host_array(d))
        return _shm.PendingArray(parts, True, kind.__name__ == "ndarray")
    if isinstance(first, tuple):
        if not all(isinstance(d, tuple) and len(d) == len(first) for d in data):
            return None
        columns = []
        for items in zip(*data):
            col = _default_batch_in_place(list(items))
            if col is None:
                return None
            columns.append(col)
        return columns
    if not isinstance(first, (np.ndarray, np.generic, int, float)):
        return None
    arr = np.asarray(data)
    return _shm.PendingArray(arr, False) if arr.dtype.kind in "biuf" else None


def _as_in_context(data, ctx):
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


# -- worker processes -----------------------------------------------------------------------------
class WorkerTraceback(Exception):
    """The traceback of an exception raised in a DataLoader worker (the `__cause__` of the
    exception re-raised in the loop)."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self):
        return "\n\nTraceback in the DataLoader worker process:\n" + self.text


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except Exception:  # no prctl: the ppid check in the task loop still ends the worker
            pass


def _worker_main(dataset, batchify_fn, tasks, results, prefix: str, parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the loop's to handle
    _die_with_parent()
    if os.getppid() != parent:
        return
    files = _shm.WorkerFiles(prefix)
    while True:
        try:
            if not tasks.poll(1.0):
                if os.getppid() != parent:
                    return
                continue
            task = tasks.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        key, samples, released = task
        files.release(released)
        layout = None
        try:
            data = [dataset[i] for i in samples]
            batch = None
            if batchify_fn is default_batchify_fn:
                try:
                    batch = _default_batch_in_place(data)
                except Exception:  # default_batchify_fn below raises the error users expect
                    batch = None
            if batch is None:
                batch = batchify_fn(data)
            layout, tree = _shm.export_batch(batch, files)
            msg = ("ok", key, layout, tree)
        except BaseException as err:  # reported to the loop, which raises it
            msg = ("error", key, _pickled_error(err), traceback.format_exc())
        try:
            results.send(msg)
        except Exception as err:  # an unpicklable non-array object in the batch
            if layout is not None and layout[0] is not None:
                files.release([layout[0]])
            results.send(("error", key, _pickled_error(err), traceback.format_exc()))


def _pickled_error(err: BaseException) -> Optional[bytes]:
    try:
        data = pickle.dumps(err)
        pickle.loads(data)
        return data
    except Exception:
        return None


_LIVE_POOLS = weakref.WeakSet()


class _WorkerProcesses:
    """num_workers forked processes, each with a task pipe and a result pipe."""

    _ids = itertools.count()

    def __init__(self, num_workers: int, dataset, batchify_fn, timeout: float):
        self._timeout = timeout
        self._prefix = os.path.join(_shm.SHM_DIR, f"ember-dataloader-{os.getpid()}-{next(self._ids)}-")
        ctx = multiprocessing.get_context("fork")
        self._workers, self._tasks, self._results = [], [], []
        # per worker: names of its files that the loop holds no array over any more, handed back
        # with the worker's next task (appended by finalizers, in any thread: a deque is safe)
        self._released: List[collections.deque] = []
        self._closed = False
        _LIVE_POOLS.add(self)
        try:
            for _ in range(num_workers):
                task_r, task_w = ctx.Pipe(duplex=False)
                res_r, res_w = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker_main, daemon=True,
                                   args=(dataset, batchify_fn, task_r, res_w, f"{self._prefix}w{len(self._workers)}-",
                                         os.getpid()))
                proc.start()
                task_r.close()
                res_w.close()
                self._workers.append(proc)
                self._tasks.append(task_w)
                self._results.append(res_r)
                self._released.append(collections.deque())
        except BaseException:
            self.shutdown()
            raise

    @property
    def pids(self) -> List[int]:
        return [p.pid for p in self._workers]

    def submit(self, key: int, samples) -> None:
        """Ask worker key % num_workers for batch `key` (returns no handle: workers answer in order)."""
        w = key % len(self._workers)
        released, names = self._released[w], []
        while released:
            names.append(released.popleft())
        self._tasks[w].send((key, list(samples), names))

    def get(self, key: int, handle=None):
        """Batch `key`, waiting at most `timeout` seconds for it."""
        w = key % len(self._workers)
        conn, proc = self._results[w], self._workers[w]
        ready = multiprocessing.connection.wait([conn, proc.sentinel], self._timeout)
        if conn not in ready:
            if proc.sentinel in ready or not proc.is_alive():
                raise self._died(w, key)
            raise multiprocessing.TimeoutError(
                f"DataLoader worker {w} (pid {proc.pid}) timed out after {self._timeout} seconds on "
                f"batch {key}: the transform may be slow (raise DataLoader's timeout), or shared "
                f"memory in {_shm.SHM_DIR} may be full (use fewer workers)")
        try:
            msg = conn.recv()
        except (EOFError, OSError):  # the worker's end of the pipe closed: it died
            raise self._died(w, key) from None
        if msg[1] != key:
            raise RuntimeError(f"DataLoader: worker {w} delivered batch {msg[1]} while batch {key} was expected")
        if msg[0] == "error":
            _, _, data, text = msg
            err = pickle.loads(data) if data is not None else RuntimeError(
                "DataLoader worker raised an exception that cannot be pickled")
            raise err from WorkerTraceback(text)
        _, _, layout, tree = msg
        return _shm.import_batch(layout, tree, self._released[w].append)

    def _died(self, w: int, key: int) -> RuntimeError:
        proc = self._workers[w]
        proc.join(5.0)
        code = proc.exitcode
        how = (f"was killed by signal {signal.Signals(-code).name}" if code is not None and code < 0
               else f"exited with code {code}")
        return RuntimeError(f"DataLoader worker {w} (pid {proc.pid}) {how} before delivering batch {key}; "
                            f"it may have run out of memory or crashed in native code")

    def shutdown(self) -> None:
        """End every worker (politely, then by force) and remove undelivered batches."""
        if self._closed:
            return
        self._closed = True
        for conn in self._tasks:
            try:
                conn.send(None)
            except Exception:
                pass
        for proc in self._workers:
            proc.join(timeout=1.0)
        for proc in self._workers:
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=1.0)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self._tasks + self._results:
            conn.close()
        _shm.discard_prefix(self._prefix)
        _LIVE_POOLS.discard(self)

    def __del__(self):
        try:
            self.shutdown()
        except Exception:
            pass


@atexit.register
def _shutdown_all() -> None:
    for pool in list(_LIVE_POOLS):
        pool.shutdown()


# -- iterators ---------------------------------------------------------------------------------------
class _MultiWorkerIter:
    """Batches in sampler order from a worker set; keeps up to prefetch + 1 batches in flight."""

    def __init__(self, pool, batch_sampler, prefetch: int, pin_memory: bool, pin_device_id: int,
                 owns_pool: bool):
        self._pool = pool
        self._owns_pool = owns_pool
        self._batch_sampler = batch_sampler
        self._iter = iter(batch_sampler)
        self._sent = self._rcvd = 0
        self._handles = {}
        self._pin = context.cpu_pinned(pin_device_id) if pin_memory else None
        for _ in range(prefetch):
            self._push_next()

    def __len__(self):
        return len(self._batch_sampler)

    def _push_next(self) -> None:
        samples = next(self._iter, None)
        if samples is None:
            return
        self._handles[self._sent] = self._pool.submit(self._sent, samples)
        self._sent += 1

    def __iter__(self):
        return self

    def __next__(self):
        self._push_next()
        if self._rcvd == self._sent:
            self.close()
            raise StopIteration
        try:
            batch = self._pool.get(self._rcvd, self._handles.pop(self._rcvd))
        except BaseException:
            self.close()
            raise
        self._rcvd += 1
        if self._pin is not None:
            batch = _as_in_context(batch, self._pin)
        return batch

    next = __next__

    def close(self) -> None:
        if self._owns_pool and self._pool is not None:
            self._pool.shutdown()
        self._pool = None if self._owns_pool else self._pool

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class _ThreadPool:
    """Threads that make batches in the loop's process (DataLoader(thread_pool=True))."""

    def __init__(self, num_workers: int, dataset, batchify_fn, timeout: float):
        self._executor = concurrent.futures.ThreadPoolExecutor(
            num_workers, thread_name_prefix="ember-dataloader",
            initializer=set_np, initargs=(is_np_shape(), is_np_array()))  # the creator's NumPy semantics
        self._dataset, self._batchify_fn, self._timeout = dataset, batchify_fn, timeout

    def _make(self, samples):
        return self._batchify_fn([self._dataset[i] for i in samples])

    def submit(self, key: int, samples):
        """Start batch `key`; returns its future (several passes may share the threads)."""
        return self._executor.submit(self._make, list(samples))

    def get(self, key: int, future):
        try:
            return future.result(self._timeout)
        except concurrent.futures.TimeoutError:
            raise multiprocessing.TimeoutError(
                f"DataLoader thread timed out after {self._timeout} seconds on batch {key}: the "
                f"transform may be slow (raise DataLoader's timeout)") from None

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


class DataLoader:
    """Loads mini-batches from `dataset` (MXNet 1.9.1's gluon.data.DataLoader).

    Give batch_size (with shuffle or a sampler, and last_batch 'keep', 'discard' or 'rollover'),
    or a batch_sampler.  batchify_fn merges samples into a batch (default_batchify_fn).
    num_workers > 0 makes batches in that many worker processes (threads with thread_pool=True),
    `prefetch` batches ahead (default 2 * num_workers); a worker that takes longer than `timeout`
    seconds for a batch raises multiprocessing.TimeoutError.  pin_memory copies batches to
    cpu_pinned(pin_device_id).  auto_reload starts the next pass's prefetching as soon as one ends.
    """

    def __init__(self, dataset, batch_size: Optional[int] = None, shuffle: bool = False, sampler=None,
                 last_batch: Optional[str] = None, batch_sampler=None, batchify_fn: Optional[Callable] = None,
                 num_workers: int = 0, pin_memory: bool = False, pin_device_id: int = 0,
                 prefetch: Optional[int] = None, thread_pool: bool = False, timeout: float = 120,
                 auto_reload: bool = False):
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        self._timeout = timeout
        assert timeout > 0, "timeout must be positive, given {}".format(timeout)
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("batch_size must be specified unless batch_sampler is specified")
            if sampler is None:
                sampler = (_sampler.RandomSampler(len(dataset)) if shuffle
                           else _sampler.SequentialSampler(len(dataset)))
            elif shuffle:
                raise ValueError("shuffle must not be specified if sampler is specified")
            batch_sampler = _sampler.BatchSampler(sampler, batch_size, last_batch if last_batch else "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError("batch_size, shuffle, sampler and last_batch must not be specified if "
                             "batch_sampler is specified.")
        self._batch_sampler = batch_sampler
        self._num_workers = num_workers if num_workers >= 0 else 0
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        self._batchify_fn = default_batchify_fn if batchify_fn is None else batchify_fn
        # made under NumPy array semantics: batches are mx.np arrays, also those made in worker processes
        self._np_array = is_np_array()
        self._worker_pool = None
        if self._num_workers > 0 and self._thread_pool:
            self._worker_pool = _ThreadPool(self._num_workers, dataset, self._batchify_fn, timeout)
        self.auto_reload = auto_reload
        self._iter = None
        if self.auto_reload:
            self.refresh()

    def __iter__(self):
        if self._iter is None:
            self.refresh()
        it, self._iter = self._iter, None  # one pass per prefetched iterator
        try:
            for batch in it:
                yield _as_np_batch(batch) if self._np_array else batch
        finally:
            if isinstance(it, _MultiWorkerIter):
                it.close()
        if self._iter is None and self.auto_reload:
            self.refresh()

    def _prefetch_iter(self):
        if self._num_workers == 0:
            return self._same_process_iter()
        if self._thread_pool:
            pool, owns = self._worker_pool, False
        else:
            from ... import ndarray as nd
            nd.waitall()  # the children start from a quiet engine
            pool, owns = _WorkerProcesses(self._num_workers, self._dataset, self._batchify_fn,
                                          self._timeout), True
        return _MultiWorkerIter(pool, self._batch_sampler, self._prefetch, self._pin_memory,
                                self._pin_device_id, owns)

    def _same_process_iter(self):
        pin = context.cpu_pinned(self._pin_device_id) if self._pin_memory else None
        for samples in self._batch_sampler:
            batch = self._batchify_fn([self._dataset[i] for i in samples])
            yield batch if pin is None else _as_in_context(batch, pin)

    def __len__(self):
        return len(self._batch_sampler)

    def refresh(self) -> None:
        """Start a new pass now (its workers begin prefetching)."""
        old, self._iter = self._iter, self._prefetch_iter()
        if isinstance(old, _MultiWorkerIter):
            old.close()

    def clean(self) -> None:
        """Drop the prefetched pass; the next iteration starts its own."""
        if isinstance(self._iter, _MultiWorkerIter):
            self._iter.close()
        self._iter = None

    def __del__(self):
        try:
            self.clean()
            if self._worker_pool is not None:
                self._worker_pool.shutdown()
        except Exception:
            pass
