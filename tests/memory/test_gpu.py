"""GPU storage through CuPy (skipped without CuPy or without a GPU)."""
import pytest

import ember as mx
from ember import memory

cupy = pytest.importorskip("cupy")
if mx.num_gpus() == 0:
    pytest.skip("no GPU visible to CuPy", allow_module_level=True)


@pytest.mark.parametrize("name", ["pooled", "plain"])
def test_gpu_blocks_are_cupy_and_reused(name):
    memory.set_manager(name, mx.gpu(0))
    block = memory.alloc(1000, mx.gpu(0))
    assert isinstance(block.data, cupy.ndarray) and block.data.dtype == cupy.uint8
    assert block.data.size >= 1000 and block.data.device.id == 0
    block.data[:1000].view(cupy.float32)[:] = 2.5
    assert float(block.data[:1000].view(cupy.float32).sum()) == 2.5 * 250
    memory.release(block)
    again = memory.alloc(1000, mx.gpu(0))
    assert (again is block) == (name == "pooled")
    memory.release(again)
    memory.empty_cache(mx.gpu(0))
    assert memory.stats(mx.gpu(0))["bytes_cached"] == 0


def test_gpu_and_cpu_managers_are_separate():
    memory.set_manager("pooled")
    assert memory.get_manager(mx.gpu(0)) is not memory.get_manager(mx.cpu())
    block = memory.alloc(10, mx.gpu(0))
    assert memory.stats(mx.cpu())["num_allocs"] == 0
    memory.release(block)
