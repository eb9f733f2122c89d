import os
import subprocess
import sys
import textwrap

import pytest

import ember.engine as engine


@pytest.fixture(autouse=True)
def _clean_engine():
    """Each test starts and ends with an idle threaded engine, default policy, no stale errors."""
    engine.wait_all_quiet()
    _drain_errors()
    yield
    engine.wait_all_quiet()
    _drain_errors()
    engine.set_policy("priority")
    engine.set_engine_type("ThreadedEngine")
    engine.set_bulk_size(0)


def _drain_errors():
    try:
        engine.wait_all()
    except BaseException:  # noqa: BLE001
        pass


def _run_python(code: str, env=None, timeout=60):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=full_env)


@pytest.fixture
def run_python():
    """Run a snippet in a fresh interpreter (engine type / thread count come from the environment)."""
    return _run_python
