"""Exceptions raised inside engine ops, kept by id until the engine forgets them.

The C core only sees integer error ids; this table maps them back to the
original Python exception (type and message intact, plus a note naming the
op) so `wait`/`wait_all` can re-raise it in the waiting thread.
"""
from __future__ import annotations

import itertools
import threading
import traceback
from typing import Dict, Optional

from ..base import EngineError

FIRST_PY_ID = 1 << 16  # ids below are the C core's own codes (1 = cancelled at shutdown)


class ErrorTable:
    """Thread-safe id -> exception map, pruned as the engine releases ids."""

    def __init__(self, drain_released):
        self._errors: Dict[int, BaseException] = {}
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
        return eid

    def prune(self) -> None:
        for eid in self._drain():
            with self._lock:
                self._errors.pop(eid, None)

    def exception(self, eid: int) -> BaseException:
        if eid == 1:
            return EngineError("operation cancelled: the engine shut down before it ran")
        with self._lock:
            exc = self._errors.get(eid)
        if exc is None:
            return EngineError(f"native engine op failed with error code {eid}")
        return exc

    def raise_for(self, eid: int) -> None:
        if eid > 0:
            raise self.exception(eid)

    def __len__(self) -> int:
        return len(self._errors)
