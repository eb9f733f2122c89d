"""Finding the processes started by this test session's MPI jobs (shared by conftest and tests)."""
from __future__ import annotations

import os

MARKER = "EMBER_KV_TEST_RUN"  # set to the pytest process id in every job's environment


def tagged_processes(session_pid: int) -> list:
    """(pid, command line) of every process whose environment has MARKER=session_pid."""
    tag = f"{MARKER}={session_pid}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == session_pid:
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


