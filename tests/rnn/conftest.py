"""Shared set-up for the mx.rnn tests."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # rnn_reference.py next to the tests

import pytest  # noqa: E402

import ember as mx  # noqa: E402


@pytest.fixture(autouse=True)
def _own_names():
    """Each test names its auto-named nodes in a fresh NameManager, leaving the global counters
    (which other tests' expected names such as 'leakyrelu0' rely on) untouched."""
    with mx.name.NameManager():
        yield
