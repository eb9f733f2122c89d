"""'dist_async': parameter-server training over MPI.  Server processes own the keys (key ->
server by a stable hash) and apply the optimizer to every push as it arrives; workers push
gradients and pull weights with no global barrier, so fast workers never wait for slow ones.

Messages (pickled tuples on TAG_REQUEST; answers on TAG_REPLY), see server.py:
('init', key, array) ('push', key, array) ('pull', key) -> ('value', key, array)
('updater', pickled callable or optimizer) -> ('ack',)   ('get_states',) -> ('states', bytes)
('set_states', bytes) -> ('ack',)   ('stop',)   heartbeats on TAG_HEARTBEAT."""
from __future__ import annotations

import pickle
import time
from typing import Any, List, Tuple

import numpy as np

from .. import engine
from ..base import FormatError
from ..optimizer import state_file
from . import arrays, jobdir, mpienv
from .dist_sync import _DistBase, _raiser, dense_values
from .errors import KVStoreError, KVStoreTimeoutError
from .keys import stable_hash
from .local import Entry, _unique_vars


class DistAsyncKVStore(_DistBase):
    """Asynchronous parameter-server store (type 'dist_async')."""

    def __init__(self, kv_type: str = "dist_async"):
        super().__init__(kv_type)
        self._servers = self._env.server_ranks
        if not self._servers:
            raise KVStoreError("dist_async needs server processes: start the job with "
                               "python -m ember.kvstore.launch -n WORKERS -s SERVERS ...")
        self._servers_have_updater = False

    def _server_of(self, key) -> int:
        return self._servers[stable_hash(key) % len(self._servers)]

    # ----------------------------------------------------------------- messaging (comm thread)
    def _send(self, dest: int, message: Tuple, what: str) -> None:
        self._poll([self._env.world.isend(message, dest=dest, tag=mpienv.TAG_REQUEST)], what)

    def _receive(self, source: int, what: str):
        MPI, world = self._MPI, self._env.world
        deadline = time.monotonic() + self._settings.timeout
        spins = 0
        while True:
            try:
                msg = world.improbe(source=source, tag=mpienv.TAG_REPLY)
            except MPI.Exception as e:
                mpienv.mark_failed()
                raise mpienv.mpi_failed(what, e.Get_error_string()) from None
            reason = jobdir.peer_failure()
            if reason is not None:
                mpienv.mark_failed()
                raise mpienv.peer_failed(what, reason)
            if msg is not None:
                reply = msg.recv()
                if reply[0] == "error":
                    raise KVStoreError(f"{what}: server {source} refused: {reply[1]}")
                return reply
            spins += 1
            if spins > 200:
                if time.monotonic() > deadline:
                    mpienv.mark_failed()
                    raise KVStoreTimeoutError(f"{what}: server rank {source} did not answer within "
                                              f"{self._settings.timeout:g}s (EMBER_KVSTORE_TIMEOUT); it probably died")
                time.sleep(min(1e-3, 1e-5 * (spins - 200)))
            else:
                time.sleep(0)

    def _ask_all_servers(self, messages: List[Tuple], what: str) -> List[Any]:
        """Send every server its message (`messages` in server order), then collect their answers."""
        def task():
            for s, message in zip(self._servers, messages):
                self._send(s, message, what)
            return [self._receive(s, what) for s in self._servers]
        return self._call(task)

    # ----------------------------------------------------------------- init
    def _init_entries(self, entries: List[Tuple[Entry, Any]]) -> None:
        self._check_init_layout(entries)
        engine.wait_all()  # init is rare; the initial values must be computed before they are sent
        if self.rank == 0:  # as in MXNet, worker 0's values initialise the servers
            def task():
                for entry, src in entries:
                    value = np.array(arrays.to_host(src._data))
                    self._send(self._server_of(entry.key), ("init", entry.key, value),
                               f"kvstore init of {entry.key!r}")
                for s in self._servers:  # an answer from each server: every init has arrived
                    self._send(s, ("sync",), "kvstore init")
                    self._receive(s, "kvstore init")
            self._call(task)
        self.barrier()

    # ----------------------------------------------------------------- updater on the servers
    def set_optimizer(self, optimizer) -> None:
        """Send the optimizer to the servers; they apply it to every push of every worker."""
        self._optimizer = optimizer
        self._send_updater(optimizer)

    def _set_updater(self, updater) -> None:
        """Send a picklable updater(key, grad, weight) to the servers (it must be importable there)."""
        if not callable(updater):
            raise KVStoreError(f"updater must be callable, got {type(updater).__name__}")
        self._send_updater(updater)

    set_updater = _set_updater

    def _send_updater(self, obj) -> None:
        try:
            blob = pickle.dumps(obj)
        except Exception as e:
            raise KVStoreError(f"cannot send {type(obj).__name__} to the servers: it does not pickle ({e})") from e
        if self.rank == 0:
            self._ask_all_servers([("updater", blob)] * len(self._servers), "sending the optimizer to the servers")
        self.barrier()
        self._servers_have_updater = True

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Fetch every server's optimizer states and write them to `fname`."""
        if not self._servers_have_updater:
            raise KVStoreError("no optimizer states: call set_optimizer(...) on this kvstore first")
        engine.wait_all()
        replies = self._ask_all_servers([("get_states", bool(dump_optimizer))] * len(self._servers),
                                        "fetching optimizer states")
        # one NDArray file holding each server's states buffer (ember.optimizer.state_file), no pickle
        with open(fname, "wb") as f:
            f.write(state_file.dumps_parts([r[1] for r in replies]))

    def load_optimizer_states(self, fname: str) -> None:
        """Give every server back its part of the states written by save_optimizer_states."""
        with open(fname, "rb") as f:
            data = f.read()
        try:
            parts = state_file.loads_parts(data)
            for blob in parts:  # check every part here, so a bad file fails on this worker, not a server
                if blob:
                    state_file.loads(blob)
        except FormatError as e:
            raise FormatError(f"{fname!r} does not hold kvstore optimizer states: {e}") from None
        if len(parts) != len(self._servers):
            raise KVStoreError(f"{fname!r} holds states of {len(parts)} servers; "
                               f"this job has {len(self._servers)}")
        self._ask_all_servers([("set_states", blob) for blob in parts], "restoring optimizer states")

    # ----------------------------------------------------------------- push / pull
    def push(self, key, value, priority: int = 0) -> None:
        """Push value(s) to the keys' servers; a row_sparse value goes as its dense values (the
        servers hold dense weights and run the standard update on them)."""
        super().push(key, dense_values(value), priority)

    def _sparse_source(self, entry: Entry):
        """The key's current value for sparse outputs (pull(ignore_sparse=False), row_sparse_pull):
        fetched from its server, which holds the only up-to-date copy."""
        current = entry.nd_type._wrap(np.zeros(entry.shape, entry.dtype), engine.Var(name="kvstore_sparse_pull"),
                                      entry.ctx)
        self._pull_entries([(entry, [current])], 0)
        return current

    def _push_entries(self, checked, priority: int) -> None:
        if not self._servers_have_updater:
            raise KVStoreError("dist_async applies the optimizer on the servers: call "
                               "kv.set_optimizer(...) before pushing")
        for entry, vals in checked:
            seq = self._comm.reserve()
            server = self._server_of(entry.key)

            def op(done, entry=entry, vals=vals, seq=seq, server=server):
                try:
                    total = np.empty(entry.shape, entry.dtype)
                    arrays.sum_into(total, [v._data for v in vals])
                except BaseException as e:
                    self._comm.submit(seq, _raiser(e), done)
                    return
                self._comm.submit(seq, lambda: self._send(server, ("push", entry.key, total),
                                                          f"kvstore push of {entry.key!r}"), done)
            self._push_op(seq, op, f"kvstore push of {entry.key!r}", read=_unique_vars(vals), write=[entry.var],
                          priority=priority, name=f"kvstore_push_async[{entry.key!r}]")

    def _pull_entries(self, checked, priority: int) -> None:
        for entry, outs in checked:
            seq = self._comm.reserve()
            server = self._server_of(entry.key)

            def op(done, entry=entry, outs=outs, seq=seq, server=server):
                def task():
                    what = f"kvstore pull of {entry.key!r}"
                    self._send(server, ("pull", entry.key), what)
                    reply = self._receive(server, what)
                    for o in outs:
                        arrays.copy_into(o._data, reply[2].reshape(entry.shape))
                self._comm.submit(seq, task, done)
            self._push_op(seq, op, f"kvstore pull of {entry.key!r}", read=[entry.var], write=_unique_vars(outs),
                          priority=priority, name=f"kvstore_pull_async[{entry.key!r}]")

    def _input_failed(self, seq: int, what, done) -> None:
        """A push or pull whose input failed is skipped (its outputs keep that error); with no
        collectives to match, the store goes on and the key's next push clears the error."""
        self._comm.submit(seq, _nothing, lambda exc: done())


def _nothing() -> None:
    """The communication task of a skipped call: its slot is used, nothing is sent."""
