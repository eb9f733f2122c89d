"""ember's dependency engine (INTERIM pure-Python synchronous stand-in; the C engine replaces it).

Public API (stable; other components code against it):
    Var(name=None)                      an engine variable (any resource); .wait(), .delete()
    push(fn, read=(), write=(), priority=0, device=None, name=None, prop='normal')
                                        fn() runs once its reads see all earlier writes and its writes
                                        follow all earlier reads/writes.  prop='async': fn(done) must call
                                        done() or done(exc) later.  Exceptions raised by fn are recorded
                                        on every written var and re-raised by wait()/wait_all().
    wait(var) / wait_all()
    set_policy(name_or_obj), bulk(size) context manager, set_bulk_size(n)
    set_engine_type('ThreadedEngine'|'NaiveEngine'), engine_type(), stats()
"""
from __future__ import annotations

import contextlib
import threading

_lock = threading.RLock()
_global_errors = []


class Var:
    """An engine variable: stands for one resource (array storage, RNG state, memory block...)."""

    __slots__ = ("name", "error", "__weakref__")

    def __init__(self, name=None):
        self.name = name
        self.error = None

    def wait(self):
        wait(self)

    def delete(self):
        pass


def push(fn, read=(), write=(), priority=0, device=None, name=None, prop="normal"):
    with _lock:
        err = None
        for v in list(read) + list(write):
            if v.error is not None:
                err = v.error
                break
        if err is None:
            try:
                if prop == "async":
                    box = []
                    fn(lambda exc=None: box.append(exc))
                    err = box[0] if box else None
                else:
                    fn()
            except Exception as e:  # noqa: BLE001 - recorded and re-raised at wait
                try:
                    e.add_note(f"(raised in engine op '{name or getattr(fn, '__name__', 'op')}')")
                except Exception:
                    pass
                err = e
            if err is not None:
                _global_errors.append(err)
        for v in write:
            v.error = err


def wait(var):
    if var.error is not None:
        raise var.error


def wait_all():
    if _global_errors:
        e = _global_errors[0]
        _global_errors.clear()
        raise e


def set_policy(policy):
    return "priority"


@contextlib.contextmanager
def bulk(size):
    yield


def set_bulk_size(n):
    return 0


def set_engine_type(name):
    return "NaiveEngine"


def engine_type():
    return "NaiveEngine"


def stats():
    return {}
