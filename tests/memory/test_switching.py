"""Switching managers at run time: live blocks return to the manager that made them."""
import numpy as np
import pytest

import ember as mx
from ember import memory
from ember.memory import Block, MemoryManagerError, PlainManager, PooledManager


def test_default_manager_is_pooled():
    assert isinstance(memory.get_manager(mx.cpu()), PooledManager)
    assert memory.stats()["manager"] == "pooled"


def test_all_cpu_contexts_share_one_manager():
    assert memory.get_manager(mx.cpu(0)) is memory.get_manager(mx.cpu(3)) is memory.get_manager()


def test_switch_with_live_blocks():
    pooled = memory.get_manager()
    old_blocks = [memory.alloc(n) for n in (10, 2000, 70000)]
    plain = memory.set_manager("plain")
    assert isinstance(plain, PlainManager) and memory.get_manager() is plain
    new_block = memory.alloc(10)
    assert new_block.manager is plain and new_block.size == 10
    for block in old_blocks:
        memory.release(block)  # back to the pooled manager, not to plain
    assert pooled.stats()["num_frees"] == 3 and pooled.stats()["bytes_in_use"] == 0
    assert plain.stats()["num_frees"] == 0 and plain.stats()["bytes_in_use"] == 10
    back = memory.set_manager("pooled")
    assert back is not pooled  # a fresh pooled manager: the old one's cache is not inherited
    memory.release(new_block)
    assert plain.stats()["num_frees"] == 1 and back.stats()["num_frees"] == 0


def test_set_manager_for_one_context_only():
    mgr = memory.set_manager("plain", mx.cpu())
    assert memory.get_manager(mx.cpu()) is mgr
    memory.release(memory.alloc(5, mx.cpu()))
    assert mgr.stats()["num_allocs"] == 1


def test_options_reach_the_manager():
    mgr = memory.set_manager("pooled", limit_bytes=1 << 20)
    assert mgr.limit_bytes == 1 << 20


def test_mxnet_pool_type_names():
    assert isinstance(memory.set_manager("Unpooled"), PlainManager)
    assert isinstance(memory.set_manager("Round"), PooledManager)


class CountingManager:
    """A custom manager: plain numpy storage, counts calls, leaves the owner stamp to ember."""

    def __init__(self):
        self.allocs = 0
        self.releases = 0
        self.peak_resets = 0

    def alloc(self, nbytes, ctx):
        self.allocs += 1
        return Block(np.zeros(nbytes, np.uint8), nbytes, nbytes, ctx)

    def release(self, block):
        self.releases += 1
        block.live = False

    def stats(self):
        return {"num_allocs": self.allocs, "num_frees": self.releases}

    def reset_peak_stats(self):
        self.peak_resets += 1


def test_custom_manager_object():
    custom = CountingManager()
    assert memory.set_manager(custom) is custom
    block = memory.alloc(33, mx.cpu())
    assert block.manager is custom and block.data.size == 33
    memory.set_manager("pooled")
    memory.release(block)  # still reaches the custom manager
    assert custom.stats() == {"num_allocs": 1, "num_frees": 1}
    memory.set_manager(custom)
    assert memory.stats() == {"num_allocs": 1, "num_frees": 1}
    memory.reset_peak_stats()
    memory.empty_cache()  # optional method missing: a no-op
    assert custom.peak_resets == 1


def test_bad_manager_arguments():
    with pytest.raises(MemoryManagerError, match="unknown memory manager 'arena'"):
        memory.set_manager("arena")
    with pytest.raises(TypeError, match="release, stats"):
        memory.set_manager(object.__new__(type("HalfManager", (), {"alloc": lambda self, n, c: None})))
    with pytest.raises(TypeError, match="options are only accepted"):
        memory.set_manager(CountingManager(), limit_bytes=3)
    with pytest.raises(TypeError, match="limit_bytes"):
        memory.set_manager("plain", limit_bytes=3)
    with pytest.raises(TypeError, match="ctx must be an ember Context"):
        memory.get_manager("cpu")
    with pytest.raises(TypeError, match="ctx must be an ember Context.*not str"):
        memory.alloc(8, "cpu")


def test_bad_sizes():
    with pytest.raises(MemoryManagerError, match="nbytes must be >= 0, got -1"):
        memory.alloc(-1)
    with pytest.raises(TypeError, match="nbytes must be an integer, not float"):
        memory.alloc(3.0)
    with pytest.raises(TypeError, match="not bool"):
        memory.alloc(True)
    block = memory.alloc(np.int64(700))  # numpy integers are fine
    assert block.nbytes == 700 and type(block.nbytes) is int
    memory.release(block)


def test_release_of_foreign_objects():
    with pytest.raises(TypeError, match="expects a Block"):
        memory.release(np.zeros(3))
    with pytest.raises(MemoryManagerError, match="no owning manager"):
        memory.release(Block(np.zeros(3, np.uint8), 3, 3))


def test_gpu_without_cupy_is_a_clear_error():
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(mx.base.ContextError, match="cupy"):
            memory.alloc(16, mx.gpu(0))
    else:
        pytest.skip("CuPy is installed; tests/memory/test_gpu.py covers GPU storage")
