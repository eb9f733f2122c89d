import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.RandomState(0)
