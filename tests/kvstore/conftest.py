"""Fixtures for the kvstore tests: the NDArray namespace and a check that no MPI job outlives the suite."""
from __future__ import annotations

import os
import signal

import pytest


def _real_nd():
    try:
        import ember
        nd = getattr(ember, "nd", None)
        if nd is not None and hasattr(nd, "array") and hasattr(nd, "zeros"):
            return nd
    except Exception:
        pass
    return None


@pytest.fixture
def nd():
    """ember.nd when it exists, else the contract-level stand-in in _ndshim.py."""
    real = _real_nd()
    if real is not None:
        return real
    import importlib.util
    spec = importlib.util.spec_from_file_location("_kvstore_ndshim", os.path.join(os.path.dirname(__file__), "_ndshim.py"))
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    return shim


MARKER = "EMBER_KV_TEST_RUN"


def _tagged_processes() -> list:
    """Processes started by this test session's MPI jobs (they carry MARKER=<our pid> in their env)."""
    tag = f"{MARKER}={os.getpid()}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if tag not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append((int(name), cmd))
    return found


@pytest.fixture(scope="session", autouse=True)
def no_stray_processes():
    """Fail the session if an MPI rank, server or launcher of these tests outlived its job."""
    yield
    leftovers = _tagged_processes()
    for pid, _ in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not leftovers, f"processes left running after the kvstore tests: {leftovers}"
