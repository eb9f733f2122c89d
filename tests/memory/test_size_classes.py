import pytest
from hypothesis import given, strategies as st

from ember.memory import size_class
from ember.memory.size_classes import SMALL_LIMIT


@pytest.mark.parametrize("nbytes,expected", [
    (0, 512), (1, 512), (512, 512), (513, 1024), (1000, 1024), (SMALL_LIMIT, SMALL_LIMIT),
    (SMALL_LIMIT + 1, SMALL_LIMIT + SMALL_LIMIT // 8), (3 << 20, 3 << 20), ((3 << 20) + 1, (3 << 20) + (1 << 18)),
])
def test_known_classes(nbytes, expected):
    assert size_class(nbytes) == expected


@given(st.integers(min_value=0, max_value=1 << 40))
def test_class_covers_request_with_bounded_waste(nbytes):
    size = size_class(nbytes)
    assert size >= nbytes
    if nbytes <= SMALL_LIMIT:
        assert size % 512 == 0 and size - max(nbytes, 1) < 512
    else:
        assert (size - nbytes) / nbytes < 0.125
    assert size_class(size) == size  # a class is its own class: cached blocks fit exactly


@given(st.integers(min_value=0, max_value=1 << 40), st.integers(min_value=0, max_value=1 << 40))
def test_rounding_is_monotonic(a, b):
    if a <= b:
        assert size_class(a) <= size_class(b)
