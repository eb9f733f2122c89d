"""'dist_sync': every worker keeps a full copy of the store; each push is summed over the local
devices, then allreduced over MPI (fused/chunked, see fusion.py), so every worker holds the same
values after each push and runs the same updater on the same gradient.  Pulls are local copies.

Two communication paths, each on a communicator of its own: the allreduces of host pushes go to
the native queue (native_comm.py: a C thread posts them, no GIL); GPU staging, init, layout checks
and barriers run on the Python communication thread (comm.py), which also takes everything when the
native queue cannot be used."""
from __future__ import annotations

import functools
import math
import zlib
from typing import Any, List, Tuple

import numpy as np

from .. import engine
from . import arrays, config, fusion, mpienv, native_comm, reuse
from .comm import Communicator, Nonblocking
from .errors import KVStoreCommError, KVStoreError, KVStoreShapeError
from .keys import _is_array, check_key, describe
from .local import Entry, KVStore, _unique_vars


COMM_PRIORITY = 1 << 20  # added to the priority of communication ops (see _DistBase._push_op)
MEMO_CALLS = 4096  # calls remembered for replay (see DistSyncKVStore._replayed)
NATIVE_CALLS = 1 << 16  # keys whose native call is kept (see DistSyncKVStore._direct_native)
class _Outs:
    """Separates a call's values from its outputs in the objects it is remembered by."""


_OUTS = _Outs()


class _DistBase(KVStore):
    """What every distributed worker store shares: MPI environment, worker communicator, comm thread."""

    def __init__(self, kv_type: str):
        super().__init__(kv_type)
        self._env = mpienv.get()
        if self._env.role != "worker":
            raise KVStoreError(f"kvstore.create({kv_type!r}) called on a server process; servers run "
                               f"python -m ember.kvstore.server")
        # Read now, not at MPI start-up: tuning variables may differ between stores of one process.
        self._settings = config.settings()
        self._workers = self._env.store_comm()
        self._env.start_heartbeat()
        self._MPI = self._env.MPI
        self._comm = Communicator(poll=self._poll, window=self._settings.window)
        self._comm_freed = False

    @property
    def rank(self) -> int:
        return self._workers.Get_rank()

    @property
    def num_workers(self) -> int:
        return self._workers.Get_size()

    def _push_op(self, seq: int, op, what, priority: int = 0, **kwargs) -> None:
        """engine.push an async op that owns communication slot `seq` (`what` names it in errors);
        if the engine refuses it, the slot is failed so later communication does not wait for it
        forever.  The op runs even when one of its inputs failed (on_error): then the slot goes to
        `_input_failed` instead of `op`, for the same reason.

        Communication ops only copy and post requests, so they are lifted above every compute op
        (as MXNet runs kvstore ops on its prioritized queue): a finished gradient starts its
        transfer at once instead of queueing behind the rest of backward.  Their order among
        themselves still follows the caller's priorities."""
        def body(done):
            if done.input_failed:
                self._input_failed(seq, what, done)
            else:
                op(done)
        try:
            engine.push(body, prop="async", priority=COMM_PRIORITY + priority, on_error=True, **kwargs)
        except BaseException as e:
            self._comm.submit(seq, _raiser(e), lambda exc: None)
            raise

    def _input_failed(self, seq: int, what, done) -> None:
        """Slot `seq`'s op runs with a failed input (its outputs keep that error).  This rank's
        collectives can no longer match the other workers', so communication stops: later calls
        fail at once and the peers get the failure notice, as on the native queue."""
        self._comm.submit(seq, _raiser(mpienv.input_failed(str(what))), lambda exc: done())

    def close(self) -> None:
        """Finish this store's communication, then release its communication thread and its MPI
        communicator.  Every worker must call it (MPI frees communicators collectively); later
        push/pull/barrier calls on the store raise KVStoreError."""
        if self._comm_freed:
            return
        self._stop_path(self._comm.stop)
        self._comm_freed = True
        self._workers.Free()

    def _stop_path(self, stop) -> None:
        """Call one communication path's stop(timeout=...); raise if what it was given did not finish."""
        wait = mpienv.startup_timeout() + self._settings.timeout
        if not stop(timeout=wait):
            raise KVStoreCommError(f"kvstore close: communication issued earlier did not finish within "
                                   f"{wait:g}s (an op whose inputs never became ready?)")

    def _poll(self, reqs, what: str) -> None:
        mpienv.poll(self._MPI, reqs, self._settings.timeout, what)

    def _call(self, task):
        # Waiting in line can take as long as the earlier pushes' inputs take to compute.
        return self._comm.call(task, timeout=mpienv.startup_timeout() + self._settings.timeout)

    def barrier(self) -> None:
        """Block until every worker has issued all its pushes up to its barrier call."""
        self._call(lambda: self._poll([self._workers.Ibarrier()], "kvstore barrier"))

    _barrier = barrier

    def _check_init_layout(self, entries) -> None:
        """Every worker must init the same keys, shapes and dtypes: KVStoreShapeError on every worker
        if they disagree.  If the check fails, the new entries are dropped."""
        layout = [(e.key, e.shape, str(e.dtype)) for e, _ in entries]

        def gather():
            mine = np.array([zlib.crc32(repr(layout).encode()), len(layout)], dtype=np.int64)
            every = np.empty((self.num_workers, 2), dtype=np.int64)
            # init comes right after start-up, where processes may lag each other by a lot
            mpienv.poll(self._MPI, [self._workers.Iallgather(mine, every)], mpienv.startup_timeout(), "kvstore init")
            return every
        try:
            every = self._call(gather)
            differ = [r for r in range(len(every)) if (every[r] != every[0]).any()]
            if differ:
                raise KVStoreShapeError(
                    f"kvstore init: workers disagree on keys, shapes or dtypes (ranks {differ} differ from rank 0); "
                    f"this worker (rank {self.rank}) has {describe([f'{k!r}:{s}:{d}' for k, s, d in layout])}")
        except KVStoreError:
            for e, _ in entries:
                self._store.pop(e.key, None)
            raise


class DistSyncKVStore(_DistBase):
    """Synchronous data-parallel store over MPI allreduce (types 'dist_sync', 'dist_device_sync')."""

    def __init__(self, kv_type: str = "dist_sync"):
        super().__init__(kv_type)
        self._fused_buffers = {}
        native_mpi_comm = self._env.store_comm()
        self._native = native_comm.create(self._MPI, native_mpi_comm, self._settings)
        if self._native is None:
            native_mpi_comm.Free()
        self._native_mpi_comm = native_mpi_comm if self._native is not None else None
        self._native_calls = reuse.SeenTwice(NATIVE_CALLS)  # key -> prepared call: see _direct_native
        self._memo = reuse.SeenTwice(MEMO_CALLS)  # (kind, keys, outs given) -> a call's steps: see _replayed

    def close(self) -> None:
        """As _DistBase.close, for both communication paths."""
        if self._native is not None:
            self._stop_path(self._native.stop)
            self._native = None
            self._native_calls.clear()
            self._native_mpi_comm.Free()
        self._memo.clear()
        super().close()

    # ----------------------------------------------------------------- init
    def _init_entries(self, entries: List[Tuple[Entry, Any]]) -> None:
        self._check_init_layout(entries)
        seq = self._comm.reserve()

        bound = [(entry, entry.data, src) for entry, src in entries]

        def op(done):
            try:
                hosts = []
                for entry, data, src in bound:
                    arrays.copy_into(data, src._data)
                    hosts.append((data, np.ascontiguousarray(arrays.to_host(data))))
            except BaseException as e:
                self._comm.submit(seq, _raiser(e), done)
                return

            def bcast():
                # Every worker starts from worker 0's values.
                self._poll([self._workers.Ibcast(h.reshape(-1), root=0) for _, h in hosts],
                           f"kvstore init of {describe([e.key for e, _ in entries])}")
                for data, h in hosts:
                    if h is not data:
                        arrays.copy_into(data, h)
            self._comm.submit(seq, bcast, done)
        self._push_op(seq, op, _What("init", [e.key for e, _ in entries]), read=_unique_vars([s for _, s in entries]),
                      write=[e.var for e, _ in entries], name="kvstore_init_bcast")

    # ----------------------------------------------------------------- push
    def _check_summable(self, checked) -> None:
        """Raise before any communication for dtypes MPI cannot sum (a failed collective would stop
        the store for good)."""
        for dt in {e.dtype for e, _ in checked}:
            if dt == np.float16:
                raise KVStoreError("dist kvstores cannot sum float16 over MPI; push float32 values")
            if dt.kind == "b" or dt.char not in self._MPI._typedict:
                keys = [e.key for e, _ in checked if e.dtype == dt]
                raise KVStoreError(f"dist kvstores cannot sum {dt} over MPI (MPI_SUM takes integer, float and "
                                   f"complex types); key(s) {describe(keys)} were initialized with {dt}")

    def push(self, key, value, priority: int = 0) -> None:
        """Push value(s) into key(s): summed over local devices, then allreduced over the workers."""
        value = dense_values(value)
        target = self._lone_key(key, value)
        if target is not None:  # one key, one array: straight to the per-key op
            self._direct(target, value, None, priority)
            return
        if self._replayed("push", key, value, None, priority):
            return
        targets = self._lone_keys(key, value)
        if targets is not None:
            steps = [functools.partial(self._direct, entry, v, None) for entry, v in zip(targets, value)]
            for step in steps:
                step(priority)
        else:
            steps = self._push_entries(self._check_push(key, value), priority)
        self._remember("push", key, value, None, steps)

    def _replayed(self, kind: str, keys, values, outs, priority: int) -> bool:
        """Repeat the remembered steps of an earlier call with the same keys, the very same value
        (and output) arrays and the same updater: training makes the same calls with the same
        gradient arrays every step, and those arrays' shapes and dtypes cannot have changed, so
        the checks and the fusion plan would come out the same."""
        try:
            steps = self._memo.get(_memo_key(kind, keys, outs), self._memo_objects(values, outs))
        except TypeError:  # an unhashable key: the checks name it
            return False
        if steps is None:
            return False
        for step in steps:
            step(priority)
        return True

    def _remember(self, kind: str, keys, values, outs, steps) -> None:
        """Offer a call's steps for _replayed (calls whose values and outputs are plain NDArrays;
        kept from the second call with the same arrays, see reuse.py)."""
        if _flat_arrays(_as_list(values)) and (outs is None or _flat_arrays(_as_list(outs))):
            self._memo.offer(_memo_key(kind, keys, outs), self._memo_objects(values, outs), steps)

    def _memo_objects(self, values, outs) -> tuple:
        """The objects a remembered call must be made with again: its arrays and the updater."""
        return (*_as_list(values), _OUTS, *(_as_list(outs) or ()), self._updater)

    def _lone_keys(self, keys, values, outs=None):
        """_lone_key for a list call (on the native path) whose keys are distinct and all too large
        to be fused, so planning would send each alone anyway: the checked entries, or None for
        the general path.  Everything is checked before anything is issued."""
        if (self._native is None or self._updater is not None or not isinstance(keys, (list, tuple))
                or not isinstance(values, (list, tuple)) or len(values) != len(keys)
                or (outs is not None and (not isinstance(outs, (list, tuple)) or len(outs) != len(keys)))):
            return None
        settings = self._settings
        entries = []
        for i, (k, v) in enumerate(zip(keys, values)):
            entry = self._lone_key(k, v, None if outs is None else outs[i])
            if entry is None or not fusion.goes_alone(entry.data.nbytes, settings.fusion_threshold,
                                                      settings.fusion_key_limit):
                return None
            entries.append(entry)
        if len({e.key for e in entries}) != len(entries):
            return None  # a repeated key: its values are summed first
        return entries

    def _lone_key(self, key, value, out=None):
        """The entry of a call with one key and one host array (and one output), checked, when it
        can take the direct per-key path; None sends the call through the general path (which
        also raises the errors this skips, such as float16)."""
        if (self._updater is not None or isinstance(key, (list, tuple)) or not _is_array(value)
                or (out is not None and not _is_array(out))):
            return None
        entry = self._entry(check_key(key))
        v, ndarray = value._data, np.ndarray
        if type(v) is ndarray and v.shape == entry.shape and v.dtype == entry.dtype:
            pass  # the common case, checked without building error texts
        else:
            self._check_like(entry, value, "pushed value")
        if out is not None:
            self._check_like(entry, out, "pull output", check_dtype=False)
        # host arrays only (subclasses and GPU arrays take the general path)
        if (entry.dtype == np.float16 or entry.dtype.kind == "b" or type(entry.data) is not ndarray
                or type(v) is not ndarray or (out is not None and type(out._data) is not ndarray)):
            return None
        return entry

    def _push_entries(self, checked, priority: int) -> list:
        """Issue a checked push; returns its steps (functions of the priority) for _replayed."""
        self._check_summable(checked)
        steps = []
        for bucket in fusion.plan(checked, self._settings.fusion_threshold, self._settings.fusion_key_limit):
            entry, vals = bucket.items[0]
            if self._direct_serves(bucket):
                steps.append(functools.partial(self._direct, entry, vals[0], None))
            else:
                steps.append(functools.partial(self._issue_bucket, self._prepare_bucket(bucket)))
        for step in steps:
            step(priority)
        return steps

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        """push(key, value) then pull(key, out); `out=None` pulls back into `value`.

        Without an updater, an unfused key with one host value and one output is done by one
        engine op and one allreduce straight into the output (in place when the output is the
        value), after which the store copies the result: one memory pass fewer than push + pull,
        and the store still holds the sum when the caller later overwrites the output."""
        if out is None and dense_values(value) is not value:
            raise KVStoreError("pushpull of row_sparse values needs `out` (the sum is dense over the workers)")
        value = dense_values(value)
        target = self._lone_key(key, value, out if out is not None else value)
        if target is not None:  # one key, one array each (Gluon's per-parameter calls): no planning
            self._direct(target, value, value if out is None else out, priority)
            return
        if self._replayed("pushpull", key, value, out, priority):
            return
        outs = value if out is None else out
        targets = self._lone_keys(key, value, outs)
        if targets is not None:
            steps = [functools.partial(self._direct, entry, v, o) for entry, v, o in zip(targets, value, outs)]
            for step in steps:
                step(priority)
            self._remember("pushpull", key, value, out, steps)
            return
        checked = self._check_push(key, value)
        pulls = self._check_pull(key, outs)
        self._check_summable(checked)
        outs_of = dict((entry.key, key_outs) for entry, key_outs in pulls)
        steps, rest = [], []
        for bucket in fusion.plan(checked, self._settings.fusion_threshold, self._settings.fusion_key_limit):
            entry, vals = bucket.items[0]
            key_outs = outs_of[entry.key]
            host = not arrays.is_device_array(entry.data)
            if self._direct_serves(bucket) and len(key_outs) == 1 and not arrays.is_device_array(key_outs[0]._data):
                steps.append(functools.partial(self._direct, entry, vals[0], key_outs[0]))
            elif self._updater is None and host:
                # the bucket's op copies the result out as well: no separate pull op per key
                prepared = self._prepare_bucket(bucket, outs=[outs_of[e.key] for e, _ in bucket.items])
                steps.append(functools.partial(self._issue_bucket, prepared))
            else:  # the pull must see the updater's result: ordinary pull ops after the updates
                steps.append(functools.partial(self._issue_bucket, self._prepare_bucket(bucket)))
                rest.extend((e, outs_of[e.key]) for e, _ in bucket.items)
        if rest:
            steps.append(functools.partial(self._pull_entries, rest))
        for step in steps:
            step(priority)
        self._remember("pushpull", key, value, out, steps)

    def _direct_serves(self, bucket: fusion.Bucket) -> bool:
        """Whether `_direct` can do a planned bucket: one unfused host key with one value, no updater."""
        entry, vals = bucket.items[0]
        return (not bucket.fused and self._updater is None and len(vals) == 1
                and not arrays.is_device_array(entry.data) and not arrays.is_device_array(vals[0]._data))

    def _direct(self, entry: Entry, value, out, priority: int) -> None:
        """One engine op and one allreduce for an unfused host key with one value and no updater:
        push (`out` None: MPI reads the value, the sum lands in the store) or pushpull (the sum
        lands in `out`, in place when `out` is the value, then the store copies it).  Kept lean:
        without fusion this runs once per key per step."""
        if self._native is not None and self._direct_native(entry, value, out, priority):
            return
        seq = self._comm.reserve()
        store = entry.data  # bound at issue: the key may be re-homed into a fusion buffer later
        comm, MPI, chunk = self._workers, self._MPI, self._settings.chunk_bytes
        verb = "push" if out is None else "pushpull"

        def op(done):
            try:
                buffers = _direct_buffers(store, value._data, None if out is None else out._data)
                land = None  # where the store copies the result from, after the allreduce
                if buffers is not None:
                    send, recv = buffers
                    result, source = recv.reshape(-1), None if send is None else send.reshape(-1)
                    if out is not None:
                        land = recv
                else:  # strided value, or strided, aliased or converting output: reduce in the store
                    arrays.copy_into(store, value._data)
                    result, source = store.reshape(-1), None
            except BaseException as e:
                self._comm.submit(seq, _raiser(e), done)
                return

            def start():  # every rank posts the same chunks of one allreduce, whichever buffers it uses
                return _allreduce_posts(comm, MPI, source, result, chunk)

            def finish():
                if land is not None:
                    np.copyto(store, land)
                elif out is not None:
                    arrays.copy_into(out._data, store)
            self._comm.submit(seq, Nonblocking(start, finish, _What(verb, [entry.key])), done)

        reads, writes = _direct_vars(entry, value, out)
        self._push_op(seq, op, _What(verb, [entry.key]), read=reads, write=writes, priority=priority,
                      name=f"kvstore_{verb}[{entry.key!r}]")

    def _direct_native(self, entry: Entry, value, out, priority: int) -> bool:
        """`_direct` on the native queue: True if done, False when the arrays are not plain
        C-contiguous host arrays of one dtype MPI sums (then the Python path does it).

        Training pushes the same arrays into a key every step, so the prepared call is kept per
        key and reused while the value, the output and the key's storage are the same objects
        (from the second such call: see reuse.py)."""
        store = entry.data
        call = self._native_calls.get(entry.key, (value, out, store))
        if call is not None:
            self._native.issue(call, COMM_PRIORITY + priority)
            return True
        v = value._data
        buffers = _direct_buffers(store, v, None if out is None else out._data)
        if (buffers is None or not arrays.plain_host(store) or v.dtype != store.dtype
                or not self._native.serves(v.dtype)):
            return False
        send, recv = buffers
        # push: the sum lands in the store; pushpull: in the output, then the store copies it
        copy_to, keep = (None, (value, store)) if out is None else (store, (value, out, store))
        reads, writes = _direct_vars(entry, value, out)
        verb = "push" if out is None else "pushpull"
        call = self._native.prepare(send, recv, copy_to, reads, writes, f"kvstore_{verb}[{entry.key!r}]", keep)
        self._native_calls.offer(entry.key, (value, out, store), call)
        self._native.issue(call, COMM_PRIORITY + priority)
        return True

    def _prepare_bucket(self, bucket: fusion.Bucket, outs=None) -> tuple:
        """Everything about a bucket's push that does not change between identical calls:
        (the keys' views into the fusion buffer, a function of the priority that pushes the
        bucket's ops, whether the updater runs, the bucket's items).  See _issue_bucket."""
        use_updater = self._updater is not None
        for entry, _ in bucket.items:
            if use_updater:
                entry.merged_nd()  # allocates the merge buffer on first use
        on_gpu = arrays.is_device_array(bucket.items[0][0].data)
        mark = fusion.fingerprint(bucket.signature(), bucket.dtype) if bucket.fused or on_gpu else None
        flat = None
        homes = []  # (entry, attribute, view): re-homed at every issue (another call may have moved them)
        if bucket.fused and not on_gpu:
            # The keys' targets become views of the fusion buffer: the allreduce result lands in the
            # store (or merge buffers) with no unpacking copy.  Ops bind arrays when issued, so
            # earlier ops keep the arrays they were issued with; the push overwrites every view.
            flat = self._buffer(bucket, mark is not None, use_updater)
            for (entry, _), off in zip(bucket.items, bucket.offsets):
                view = flat[off:off + math.prod(entry.shape)].reshape(entry.shape)
                homes.append((entry, "merge_data" if use_updater else "data", view))
                setattr(entry, homes[-1][1], view)
        elif on_gpu:
            flat = self._buffer(bucket, mark is not None, use_updater)  # host staging buffer for MPI
        targets = [(entry, entry.merge_data if use_updater else entry.data,
                    entry.merge_var if use_updater else entry.var) for entry, _ in bucket.items]
        keys = [e.key for e, _ in bucket.items]
        what = _What("push", keys)
        # Packing one host value per key, contiguous and of the buffer's dtype (the common case), is
        # one numpy call over views made now: the values are the same arrays at every issue.
        packed = None
        if flat is not None and not on_gpu and all(
                len(vals) == 1 and arrays.plain_host(vals[0]._data) and vals[0]._data.dtype == bucket.dtype
                for _, vals in bucket.items):
            packed = [vals[0]._data.reshape(-1) for _, vals in bucket.items]
        # One plain value of an unfused host key: MPI reads it directly, no copy into the store first.
        vals = bucket.items[0][1]
        source = None
        if flat is None and not on_gpu and len(vals) == 1 and arrays.plain_host(vals[0]._data) \
                and vals[0]._data.dtype == bucket.dtype:
            source = vals[0]._data

        def fill_host():
            """Sum (or copy) the values into the host targets, then write the fingerprint."""
            if packed is not None:
                np.concatenate(packed, out=flat[:bucket.size])
            else:
                for (_, key_vals), (_, target, _) in zip(bucket.items, targets):
                    arrays.sum_into(target, [v._data for v in key_vals])
            if mark is not None:
                flat[-1] = mark

        values_read = _unique_vars([v for _, vals in bucket.items for v in vals])
        target_vars = [t[2] for t in targets]
        out_vars = _unique_vars([o for os_ in outs for o in os_]) if outs is not None else []
        name = f"kvstore_allreduce{describe(keys, 3)}"
        if (self._native is not None and not on_gpu and self._native.serves(bucket.dtype)
                and (flat is not None or arrays.plain_host(targets[0][1]))):
            issue = self._native_bucket(flat, fill_host, source, bucket, targets, mark, what, outs, values_read,
                                        out_vars, name)
            return homes, issue, use_updater, bucket.items

        def op(seq, done):
            try:
                if on_gpu:
                    for (entry, key_vals), off in zip(bucket.items, bucket.offsets):
                        n = math.prod(entry.shape)
                        arrays.sum_into(flat[off:off + n].reshape(entry.shape), [v._data for v in key_vals])
                    flat[-1] = mark
                elif source is None:
                    fill_host()
                result = flat if flat is not None else targets[0][1].reshape(-1)
            except BaseException as e:
                self._comm.submit(seq, _raiser(e), done)
                return
            flat_source = None if source is None else source.reshape(-1)
            self._comm.submit(seq, self._allreduce(flat_source, result, on_gpu, bucket, targets, mark, what, outs),
                              done)

        written = {id(v) for v in target_vars + out_vars}
        reads = [v for v in values_read if id(v) not in written]  # pulled back into a pushed value

        def issue(priority):
            seq = self._comm.reserve()
            self._push_op(seq, functools.partial(op, seq), what, read=reads, write=target_vars + out_vars,
                          priority=priority, name=name)
        return homes, issue, use_updater, bucket.items

    def _native_bucket(self, flat, fill_host, source, bucket, targets, mark, what, outs, values_read, out_vars,
                       name):
        """A host bucket on the native queue: `fill_host` as an op (the values summed or copied into
        the fusion buffer, or into an unfused key's target), the allreduce of that buffer in place,
        then an op that checks the layout fingerprint and copies the outputs.  With `source` (one
        plain value of an unfused key) the allreduce reads the value: no fill, and no finish
        without outputs.  Returns the function of the priority that pushes the ops."""
        target_vars = [t[2] for t in targets]
        if source is not None:  # (an unfused key has no fingerprint)
            call = self._native.prepare(source, targets[0][1], None, values_read, target_vars, name,
                                        (bucket.items[0][1][0], targets[0][1]))
        else:
            buffer = flat if flat is not None else targets[0][1]
            call = self._native.prepare(None, buffer, None, [], target_vars, name, (buffer,))

        def finish():
            self._finish_bucket(flat, mark, what, False, bucket, targets, outs)
        needs_finish = mark is not None or outs is not None

        def issue(priority):
            priority += COMM_PRIORITY
            if source is None:
                engine.push(fill_host, read=values_read, write=target_vars, priority=priority, name=name + ":pack")
            self._native.issue(call, priority)
            if needs_finish:
                engine.push(finish, write=target_vars + out_vars, priority=priority, name=name + ":finish")
        return issue

    def _issue_bucket(self, prepared: tuple, priority: int) -> None:
        """Push the ops of a _prepare_bucket()ed bucket, taking the next communication slot."""
        homes, issue, use_updater, items = prepared
        for entry, attribute, view in homes:
            setattr(entry, attribute, view)
        issue(priority)
        if use_updater:
            for entry, _ in items:
                self._updater(entry.key, entry.merged_nd(), entry.stored_nd())

    def _buffer(self, bucket: fusion.Bucket, with_mark: bool, for_merge: bool) -> np.ndarray:
        # Separate buffers for store and merge targets: with an updater the fused views are merge
        # buffers, without one they are the stored values themselves; the two must never alias.
        sig = (bucket.signature(), for_merge)
        buf = self._fused_buffers.get(sig)
        if buf is None:
            buf = np.empty(bucket.size + (1 if with_mark else 0), dtype=bucket.dtype)
            self._fused_buffers[sig] = buf
        return buf

    def _allreduce(self, source, flat, staged, bucket, targets, mark, what, outs=None) -> Nonblocking:
        MPI = self._MPI
        chunk = self._settings.chunk_bytes

        def start():  # one posting function per chunk: the communicator posts them as its window allows
            return _allreduce_posts(self._workers, MPI, source, flat, chunk)

        def finish():
            self._finish_bucket(flat, mark, what, staged, bucket, targets, outs)
        return Nonblocking(start, finish, what)

    def _finish_bucket(self, flat, mark, what, staged, bucket, targets, outs) -> None:
        """After a bucket's allreduce: check the layout fingerprint, copy GPU targets back from the
        host staging buffer, copy the results into the outputs."""
        if mark is not None and flat[-1] != mark * self.num_workers:
            raise KVStoreCommError(f"{what}: workers pushed different keys or shapes in the same "
                                   f"kvstore call; every worker must push the same keys in the same order")
        if staged:  # GPU targets: copy the host result back to the device
            for (entry, target, _), off in zip(targets, bucket.offsets):
                n = math.prod(entry.shape)
                arrays.copy_into(target, flat[off:off + n].reshape(entry.shape))
        if outs is not None:
            for (_, target, _), key_outs in zip(targets, outs):
                for o in key_outs:
                    arrays.copy_into(o._data, target)


class _What:
    """Names a transfer in error messages; formatted only when one is raised (pushes are frequent)."""

    __slots__ = ("verb", "keys")

    def __init__(self, verb: str, keys):
        self.verb, self.keys = verb, keys

    def __str__(self) -> str:
        # the native queue's form (native_comm._what), so both paths' errors read alike
        return f"kvstore {self.verb} of key{'s' if len(self.keys) > 1 else ''} {describe(self.keys)[1:-1]}"


def _allreduce_posts(comm, MPI, source, result, chunk_bytes: int) -> list:
    """Functions posting the Iallreduce of `source` (None: in place) into `result`, one per chunk."""
    if result.nbytes <= chunk_bytes:
        return [functools.partial(comm.Iallreduce, MPI.IN_PLACE if source is None else source, result, op=MPI.SUM)]
    results = fusion.chunks(result, chunk_bytes)
    sources = fusion.chunks(source, chunk_bytes) if source is not None else [MPI.IN_PLACE] * len(results)
    return [functools.partial(comm.Iallreduce, s, r, op=MPI.SUM) for s, r in zip(sources, results)]


def _direct_buffers(store, v, o):
    """(send, recv) of a direct call's allreduce when no copy is needed first, else None.

    Push (`o` None): the value is sent, the store receives.  Pushpull: into the output, in place
    (send None) when it is the value; not for a strided, aliased or dtype-converting output."""
    if o is None:
        return (v, store) if arrays.plain_host(v) else None
    if (arrays.plain_host(v) and arrays.plain_host(o) and o.dtype == store.dtype
            and (o is v or not np.may_share_memory(o, v))):
        return (None if o is v else v), o
    return None


def _direct_vars(entry: Entry, value, out):
    """(reads, writes) of a direct call's op: pushpull writes its output, read too when it is not the value."""
    if out is None:
        return [value._chunk.var], [entry.var]
    return ([value._chunk.var] if value._chunk.var is not out._chunk.var else []), [out._chunk.var, entry.var]


def _memo_key(kind: str, keys, outs) -> tuple:
    """What a remembered call is found by (a dict lookup with it raises TypeError for unhashable keys)."""
    return kind, tuple(keys) if isinstance(keys, (list, tuple)) else ("one key", keys), outs is None


def _as_list(values):
    """A call's values (or outputs) as one flat list: a single array becomes [array]."""
    if values is None or isinstance(values, list):
        return values
    return list(values) if isinstance(values, tuple) else [values]


def _flat_arrays(values) -> bool:
    """A list of NDArrays, one per key (not lists of per-device values)."""
    return isinstance(values, (list, tuple)) and all(_is_array(v) for v in values)


def dense_values(value):
    """`value` (an array, or nested lists of arrays) with sparse arrays replaced by dense copies.

    The dist stores sum dense buffers over MPI: a row_sparse gradient takes part as its dense
    values (the sum over workers is the same as MXNet's sparse merge); the original object comes
    back when nothing is sparse."""
    if isinstance(value, (list, tuple)):
        converted = [dense_values(v) for v in value]
        return value if all(c is v for c, v in zip(converted, value)) else type(value)(converted)
    if getattr(value, "stype", "default") not in ("default", None) and hasattr(value, "tostype"):
        return value.tostype("default")
    return value


def _raiser(exc: BaseException):
    def task():
        raise exc
    return task
