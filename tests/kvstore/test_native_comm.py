"""The native path's pure helpers (the queue itself: tests/kvstore/test_dist.py under MPI, and
native/collectives_test.c over a fake MPI under ASan and valgrind)."""
from __future__ import annotations

from types import SimpleNamespace

from ember.kvstore import native_comm


def fake_mpi(handle_size=4, request_size=None, multiple=True):
    sizes = {"Comm": handle_size, "Request": request_size or handle_size}
    return SimpleNamespace(Comm="Comm", Request="Request", _sizeof=lambda kind: sizes[kind],
                           THREAD_MULTIPLE=3, Query_thread=lambda: 3 if multiple else 1)


def test_why_the_native_path_is_not_used(monkeypatch):
    monkeypatch.setenv("EMBER_KVSTORE_NATIVE", "0")
    assert native_comm._usable(fake_mpi()) == "EMBER_KVSTORE_NATIVE=0"
    monkeypatch.delenv("EMBER_KVSTORE_NATIVE")
    assert "handles of 16 bytes" in native_comm._usable(fake_mpi(16))
    assert "handles of 4 bytes" in native_comm._usable(fake_mpi(4, request_size=8))
    assert "MPI_THREAD_MULTIPLE" in native_comm._usable(fake_mpi(multiple=False))
    monkeypatch.setattr(native_comm, "_entry_points", lambda: None)
    assert "MPI_Iallreduce" in native_comm._usable(fake_mpi())
    monkeypatch.setattr(native_comm, "_entry_points", lambda: (1, 2))
    assert native_comm._usable(fake_mpi(8)) is None


def test_handles_are_passed_signed():
    # mpi4py reports MPICH's negative int handles as unsigned 64-bit values
    assert native_comm._handle(0xFFFFFFFF84000000) == 0xFFFFFFFF84000000 - (1 << 64)
    assert native_comm._handle(1140850688) == 1140850688
    assert native_comm._handle(-1) == -1


def test_op_names_read_as_error_messages():
    assert native_comm._what("kvstore_push[3]") == "kvstore push of key 3"
    assert native_comm._what("kvstore_pushpull['fc1_weight']") == "kvstore pushpull of key 'fc1_weight'"
    assert native_comm._what("kvstore_allreduce[0, 1, 2, ...]") == "kvstore allreduce of keys 0, 1, 2, ..."
    assert native_comm._what("something else") == "something else"
