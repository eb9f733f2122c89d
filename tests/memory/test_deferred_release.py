"""Freeing an NDArray while an op on it is pending: its block returns only after the op ends."""
import threading

import numpy as np

from ember import engine, memory
from ember.imperative import empty


def test_block_is_not_reused_before_pending_op_ends():
    first = empty((256,), dtype=np.float32)  # 1024 bytes: the 1024-byte size class
    block, storage, var = first._chunk.block, first._data, first.var
    started, finish = threading.Event(), threading.Event()
    observed = []

    def slow_writer():
        started.set()
        assert finish.wait(10), "test never let the op finish"
        storage[:] = 7.0  # still ours: nobody else may have been given this block
        observed.append(block.live)

    engine.push(slow_writer, write=(var,), name="slow_writer")
    try:
        assert started.wait(10)
        first._free()
        del first
        assert block.live  # the release op waits behind slow_writer
        second = empty((256,), dtype=np.float32)
        assert second._chunk.block is not block
        second._data[:] = 1.0
    finally:
        finish.set()  # never leave the op blocking an engine worker
    engine.wait_all()
    assert observed == [True]
    np.testing.assert_array_equal(second._data, 1.0)  # slow_writer did not write into `second`
    assert not block.live
    third = empty((256,), dtype=np.float32)
    assert third._chunk.block is block  # released after the op: reused now
    stats = memory.stats()
    assert stats["cache_hits"] >= 1 and stats["live_blocks"] == 2


def test_dropping_the_last_reference_defers_release_too():
    arr = empty((100,), dtype=np.float64)
    block = arr._chunk.block
    gate = threading.Event()
    engine.push(lambda: gate.wait(10), read=(arr.var,), name="slow_reader")
    try:
        del arr  # Chunk.__del__ pushes the release behind the reader
        assert block.live
    finally:
        gate.set()
    engine.wait_all()
    assert not block.live
