"""Fixtures for the kvstore tests: the NDArray namespace and a check that no MPI job outlives the suite."""
from __future__ import annotations

import os
import signal
import subprocess

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


def _descendants(pid: int) -> list:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    children = {}
    pairs = [tuple(int(x) for x in l.split()) for l in out.strip().splitlines() if l.strip()]
    for p, pp in pairs:
        children.setdefault(pp, []).append(p)
    found, stack = [], [pid]
    while stack:
        for c in children.get(stack.pop(), []):
            found.append(c)
            stack.append(c)
    return found


@pytest.fixture(scope="session", autouse=True)
def no_stray_processes():
    """Fail the session if a test left an MPI rank or launcher running."""
    yield
    me = os.getpid()
    leftovers = []
    for pid in _descendants(me):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "ps -e" not in cmd:
            leftovers.append((pid, cmd))
    for pid, _ in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not leftovers, f"processes left running after the kvstore tests: {leftovers}"
