"""Each memory test starts and ends with fresh default managers, so counters start at zero."""
import pytest

from ember import memory


@pytest.fixture(autouse=True)
def fresh_managers():
    memory.set_manager("pooled")
    yield
    memory.set_manager("pooled")
