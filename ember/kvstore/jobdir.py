"""Fast failure notice between the processes of a single-host job.

The launcher creates a job directory and passes it as EMBER_KVSTORE_JOB_DIR.  When a rank's
command fails (non-zero exit or a signal), its supervisor writes `failed.<rank>` there with the
reason; every other rank checks the directory while it waits on communication and stops at once
with that reason, instead of waiting EMBER_KVSTORE_TIMEOUT seconds (which remains the mechanism
across hosts, where the directory is not shared).  A value that is not a directory (e.g. 'none')
disables it."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Optional

_last_check = 0.0


def directory() -> Optional[str]:
    """The job directory, or None when there is none (not launched by ember.kvstore.launch)."""
    path = os.environ.get("EMBER_KVSTORE_JOB_DIR", "")
    return path if path and os.path.isdir(path) else None


def launcher_rank() -> str:
    """This process's rank as the MPI launcher set it before MPI starts (MPICH's hydra: PMI_RANK;
    Open MPI: OMPI_COMM_WORLD_RANK; PMIx launchers: PMIX_RANK), or '?'."""
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        value = os.environ.get(name)
        if value is not None:
            return value
    return "?"


def report_failure(rank: str, reason: str) -> None:
    """Record that `rank` failed (called by the supervisor after its command ended badly)."""
    path = directory()
    if path is None:
        return
    tmp = os.path.join(path, f".failed.{rank}.{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(reason)
    os.replace(tmp, os.path.join(path, f"failed.{rank}"))  # readers never see a half-written file


def peer_failure(my_rank: Optional[str] = None, every: float = 0.2) -> Optional[str]:
    """The reason another rank failed, if one did (checked at most every `every` seconds)."""
    global _last_check
    now = time.monotonic()
    if now - _last_check < every:
        return None
    _last_check = now
    path = directory()
    if path is None:
        return None
    mine = my_rank if my_rank is not None else launcher_rank()
    try:
        names = [n for n in os.listdir(path) if n.startswith("failed.") and n != f"failed.{mine}"]
        # the first failure is the cause; later ones are ranks that stopped because of it
        names.sort(key=lambda n: os.stat(os.path.join(path, n)).st_mtime_ns)
    except OSError:
        return None
    for name in names:
        try:
            with open(os.path.join(path, name)) as f:
                return f.read().strip() or f"rank {name[7:]} failed"
        except OSError:
            continue
    return None


_WATCHDOG = r"""
import os, signal, sys, time
parent, path, mine = int(sys.argv[1]), sys.argv[2], sys.argv[3]
while True:
    time.sleep(0.25)
    try:
        os.kill(parent, 0)
        names = [n for n in os.listdir(path) if n.startswith("failed.") and n != "failed." + mine]
    except OSError:
        sys.exit(0)
    if names:
        names.sort(key=lambda n: os.stat(os.path.join(path, n)).st_mtime_ns)
        with open(os.path.join(path, names[0])) as f:
            reason = f.read().strip()
        print(f"ember.kvstore: rank {mine} stops while MPI starts up: {reason}", file=sys.stderr, flush=True)
        os.kill(parent, signal.SIGTERM)
        time.sleep(2)
        try:
            os.kill(parent, signal.SIGKILL)
        except OSError:
            pass
        sys.exit(0)
"""


def start_init_watchdog() -> Optional[subprocess.Popen]:
    """A small process that ends this one if another rank fails while MPI starts (MPI_Init holds
    the GIL, so no thread of this process could).  None without a job directory."""
    path = directory()
    if path is None:
        return None
    return subprocess.Popen([sys.executable, "-c", _WATCHDOG, str(os.getpid()), path,
                             launcher_rank()])
