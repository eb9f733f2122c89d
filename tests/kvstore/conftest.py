"""Fixtures for the kvstore tests: the NDArray namespace and a check that no MPI job outlives the suite."""
from __future__ import annotations

import os
import signal

import pytest


@pytest.fixture
def nd():
    """The NDArray namespace the store is tested with."""
    import ember
    return ember.nd


def _procs():
    import importlib.util
    spec = importlib.util.spec_from_file_location("_kvstore_procs", os.path.join(os.path.dirname(__file__), "_procs.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session", autouse=True)
def no_stray_processes():
    """Fail the session if an MPI rank, server or launcher of these tests outlived its job."""
    yield
    leftovers = _procs().tagged_processes(os.getpid())
    for pid, _ in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not leftovers, f"processes left running after the kvstore tests: {leftovers}"
