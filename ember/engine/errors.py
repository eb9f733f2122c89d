"""Exceptions raised inside engine ops, kept by id until the engine forgets them.

The C core only sees integer error ids; this table maps them back to the
original Python exception (type and message intact, plus a note naming the
op) so `wait`/`wait_all` can re-raise it in the waiting thread.

As in MXNet, an error is raised once: after a wait (or a NaiveEngine call) raised it, it is
"consumed" and no later wait or wait_all raises it again, whichever variable carries it
(the failed op's outputs and everything that inherited from them share its id).  wait_all
raises the first error not raised yet since the previous wait_all and consumes them all.
"""
from __future__ import annotations

import itertools
import threading
import traceback
from typing import Dict, List, Optional, Set

from ..base import EngineError

FIRST_PY_ID = 1 << 16  # ids below are the C core's own codes (1 = cancelled at shutdown)


class ErrorTable:
    """Thread-safe id -> exception map, pruned as the engine releases ids.

    "Raised once" is kept per exception object: one failure may be registered under several ids
    (a kernel error recorded on the claimed variables and on the new output) and is still one error."""

    def __init__(self, drain_released, clear=None):
        self._clear = clear  # clear(id): the C core stops treating error `id` as a failure
        self._errors: Dict[int, BaseException] = {}
        self._refs: Dict[int, int] = {}        # id(exception) -> how many table entries hold it
        self._consumed: Set[int] = set()       # id(exception) of errors raised once already
        self._since_wait_all: List[int] = []   # ids registered since the last wait_all, in order
        self._ids = itertools.count(FIRST_PY_ID)
        self._lock = threading.Lock()
        self._drain = drain_released

    def register(self, exc: BaseException, op_name: Optional[str]) -> int:
        # The traceback's frames hold the op's arguments (arrays, engine variables); keeping them would
        # keep those variables, and so this error, alive for ever.  Keep the text, drop the frames.
        where = "".join(traceback.format_tb(exc.__traceback__)[-3:]) if exc.__traceback__ else ""
        exc.__traceback__ = None
        try:
            exc.add_note(f"(raised in engine op '{op_name or 'anonymous'}')" + (f"\n{where.rstrip()}" if where else ""))
        except Exception:  # noqa: BLE001 - notes are decoration only
            pass
        self.prune()
        with self._lock:
            eid = next(self._ids)
            self._errors[eid] = exc
            self._refs[id(exc)] = self._refs.get(id(exc), 0) + 1
            self._since_wait_all.append(eid)
        return eid

    def prune(self) -> None:
        for eid in self._drain():
            with self._lock:
                exc = self._errors.pop(eid, None)
                if exc is not None:
                    key = id(exc)
                    left = self._refs[key] - 1
                    if left:
                        self._refs[key] = left
                    else:  # the object may die now and its id() be reused: forget it
                        del self._refs[key]
                        self._consumed.discard(key)
        if len(self._since_wait_all) > 4096:  # a long run without wait_all: forget released ids
            with self._lock:
                self._since_wait_all = [i for i in self._since_wait_all if i in self._errors]

    def exception(self, eid: int) -> BaseException:
        if eid == 1:
            return EngineError("operation cancelled: the engine shut down before it ran")
        with self._lock:
            exc = self._errors.get(eid)
        if exc is None:
            return EngineError(f"native engine op failed with error code {eid}")
        return exc

    def _consumed_locked(self, eid: int) -> bool:
        exc = self._errors.get(eid)
        return exc is not None and id(exc) in self._consumed

    def is_consumed(self, eid: int) -> bool:
        """Whether error `eid` was raised already (then no wait raises it again)."""
        with self._lock:
            return self._consumed_locked(eid)

    def _consume_locked(self, excs) -> List[int]:
        """Mark these exceptions raised; the ids that hold them (to clear in the C core)."""
        keys = {id(e) for e in excs}
        self._consumed.update(keys)
        return [i for i, e in self._errors.items() if id(e) in keys]

    def _clear_ids(self, ids) -> None:
        if self._clear is not None:
            for i in ids:
                self._clear(i)

    def raise_for(self, eid: int) -> None:
        """Raise error `eid` unless it was raised before (then it is cleared, as in MXNet)."""
        if eid > 0:
            with self._lock:
                if self._consumed_locked(eid):
                    return
                exc = self._errors.get(eid)
                ids = self._consume_locked([exc]) if exc is not None else [eid]
            self._clear_ids(ids)
            raise self.exception(eid)

    def raise_for_wait_all(self, eid: int) -> None:
        """wait_all's rule: raise the first error not raised yet since the last wait_all (`eid` is
        the first one the C core saw), and consume every one of them."""
        with self._lock:
            ids, self._since_wait_all = self._since_wait_all, []
            first = next((i for i in ids if i in self._errors and not self._consumed_locked(i)), None)
            if first is None and eid > 0 and not self._consumed_locked(eid):
                first = eid  # an error only the C core knows (cancelled at shutdown)
            fresh = [self._errors[i] for i in ids if i in self._errors and not self._consumed_locked(i)]
            cleared = self._consume_locked(fresh) if fresh else []
            if first is not None and first not in self._errors:
                cleared.append(first)
        self._clear_ids(cleared)
        if first is not None:
            raise self.exception(first)

    def __len__(self) -> int:
        return len(self._errors)
