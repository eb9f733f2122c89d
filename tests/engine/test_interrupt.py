"""Ctrl-C (SIGINT: KeyboardInterrupt) stops a wait for an op that has not finished, as it stops
Python code, instead of waiting for the op first (which may never end).  Each case runs in its own
interpreter: the signal then cannot reach pytest itself."""
import os
import subprocess
import sys
import textwrap

import pytest

_SCRIPT = textwrap.dedent('''
    import os, signal, sys, threading
    import ember as mx
    from ember import engine

    # Python's own Ctrl-C handler, also where this process inherited SIGINT ignored (a background job)
    signal.signal(signal.SIGINT, signal.default_int_handler)

    release = threading.Event()
    backstop = threading.Timer(60, release.set)  # a failing wait ends after all, and says so below
    backstop.start()
    arr = mx.nd.ones((1000,)) + 1
    engine.push(release.wait, write=[arr._chunk.var], name="never_ends_by_itself")
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        {call}
        print("returned")
    except KeyboardInterrupt:
        print("interrupted" if not release.is_set() else "interrupted late")
    release.set()
    backstop.cancel()
    mx.nd.waitall()  # the engine goes on after the interrupted wait
    print(float(arr.asnumpy().sum()))
''')


@pytest.mark.parametrize("call", ["arr.wait_to_read()", "arr.asnumpy()", "mx.nd.waitall()",
                                  "engine.wait_all(timeout=30)"])
def test_ctrl_c_interrupts_a_wait(call, tmp_path):
    script = tmp_path / "interrupt.py"
    script.write_text(_SCRIPT.replace("{call}", call))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180,
                       env=dict(os.environ))
    assert r.stdout.split() == ["interrupted", "2000.0"], r.stdout + r.stderr
