"""Shared fixtures for the training-toolkit tests."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # the reference helpers next to the tests
DATA = os.path.join(HERE, "..", "data", "models")


@pytest.fixture
def models_dir():
    return DATA
