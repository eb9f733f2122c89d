"""A dist_async parameter server: `python -m ember.kvstore.server` (started by the launcher).

Holds the keys that hash to it, applies the workers' optimizer to each push as it arrives,
answers pulls, and exits when every worker has said goodbye, or with an error when a worker
stays silent for EMBER_KVSTORE_TIMEOUT seconds (workers send heartbeats)."""
from __future__ import annotations

import pickle
import sys
import time
from typing import Dict

from . import jobdir, mpienv
from .errors import KVStoreError, KVStoreTimeoutError


class Server:
    """The state and message handlers of one server process."""

    def __init__(self, env: mpienv.MPIEnv):
        self.env = env
        self.world = env.world
        self.weights: Dict = {}
        self.updater = None
        self.pending = []  # outstanding reply sends

    def reply(self, dest: int, message) -> None:
        self.pending = [r for r in self.pending if not r.Test()]
        self.pending.append(self.world.isend(message, dest=dest, tag=mpienv.TAG_REPLY))

    def handle(self, source: int, message) -> bool:
        """Process one request; False once this worker said goodbye."""
        import ember
        cmd = message[0]
        if cmd == "init":
            _, key, value = message
            if key not in self.weights:
                self.weights[key] = ember.nd.array(value, dtype=value.dtype)
        elif cmd == "sync":
            self.reply(source, ("ack",))
        elif cmd == "updater":
            obj = pickle.loads(message[1])
            if hasattr(obj, "update") and hasattr(obj, "create_state"):  # an mx.optimizer.Optimizer
                from .. import optimizer as opt_module
                obj = opt_module.get_updater(obj)
            self.updater = obj
            self.reply(source, ("ack",))
        elif cmd == "push":
            _, key, grad = message
            weight = self.weights.get(key)
            if weight is None:
                raise KVStoreError(f"worker {source} pushed key {key!r} that was never initialized")
            if self.updater is None:
                raise KVStoreError(f"worker {source} pushed key {key!r} before any optimizer was set")
            self.updater(key, ember.nd.array(grad, dtype=grad.dtype), weight)
        elif cmd == "pull":
            key = message[1]
            weight = self.weights.get(key)
            if weight is None:
                self.reply(source, ("error", f"key {key!r} was never initialized"))
            else:
                self.reply(source, ("value", key, weight.asnumpy()))
        elif cmd == "get_states":
            if self.updater is None or not hasattr(self.updater, "get_states"):
                self.reply(source, ("states", b""))
            else:
                ember.nd.waitall()
                self.reply(source, ("states", self.updater.get_states(message[1])))
        elif cmd == "set_states":
            if message[1] and self.updater is not None and hasattr(self.updater, "set_states"):
                self.updater.set_states(message[1])
            self.reply(source, ("ack",))
        elif cmd == "stop":
            return False
        else:
            raise KVStoreError(f"worker {source} sent an unknown command {cmd!r}")
        return True

    def serve(self) -> None:
        """Answer requests until every worker stopped; raise if one falls silent."""
        MPI = self.env.MPI
        settings = self.env.settings
        started = time.monotonic()
        last_seen = {}
        active = set(self.env.worker_ranks)
        status = MPI.Status()
        idle = 0
        while active:
            msg = self.world.improbe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
            now = time.monotonic()
            if msg is None:
                idle += 1
                reason = jobdir.peer_failure()
                if reason is not None:
                    mpienv.mark_failed()
                    raise mpienv.peer_failed(f"server rank {self.world.Get_rank()}", reason)
                for w in active:
                    seen = last_seen.get(w)
                    limit = settings.timeout if seen is not None else mpienv.startup_timeout()
                    if now - (seen if seen is not None else started) > limit:
                        mpienv.mark_failed()
                        raise KVStoreTimeoutError(
                            f"server rank {self.world.Get_rank()}: worker rank {w} "
                            f"{'sent nothing' if seen is not None else 'never connected'} for {limit:g}s "
                            f"(EMBER_KVSTORE_TIMEOUT); it probably died, stopping")
                time.sleep(0 if idle < 100 else min(2e-3, 1e-5 * idle))
                continue
            idle = 0
            source, tag = status.Get_source(), status.Get_tag()
            message = msg.recv()
            last_seen[source] = now
            if tag == mpienv.TAG_HEARTBEAT:
                continue
            try:
                keep = self.handle(source, message)
            except KVStoreError:
                raise
            except Exception as e:  # a bad updater or message must stop the job with a clear reason
                raise KVStoreError(f"server rank {self.world.Get_rank()}: handling {message[0]!r} from worker "
                                   f"rank {source} failed: {type(e).__name__}: {e}") from e
            if not keep:
                active.discard(source)
        mpienv.poll(MPI, self.pending, settings.timeout, "server: delivering the last replies")


def main() -> int:
    env = mpienv.get()
    if env.role != "server":
        print("ember.kvstore.server: this process is not a server rank (check DMLC_NUM_WORKER/"
              "DMLC_NUM_SERVER; start jobs with python -m ember.kvstore.launch)", file=sys.stderr)
        return 2
    try:
        Server(env).serve()
    except KVStoreError as e:
        mpienv.mark_failed()
        print(f"ember.kvstore.server: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
