"""Shared by the mx.np tests: `np_semantics` (MXNet's NumPy array and shape semantics around a test; a
module takes it for all its tests with `pytestmark = pytest.mark.usefixtures("np_semantics")`)."""
import pytest

from ember import npx


@pytest.fixture
def np_semantics():
    npx.set_np()
    yield
    npx.reset_np()
