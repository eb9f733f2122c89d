"""Runs one rank's command as a child and turns a death by signal into an ordinary exit status.

MPICH's launcher kills every process of a job as soon as one is killed by a signal, so the
survivors would vanish without saying why.  Behind this wrapper a killed rank looks like an
error exit (128 + signal) to the launcher, and the surviving ranks detect the loss themselves
(EMBER_KVSTORE_TIMEOUT) and exit with a clear error.  Used by `ember.kvstore.launch`:

    python -m ember.kvstore.supervise COMMAND [ARGS...]
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import List

from . import jobdir


def _die_with_parent() -> None:
    """In the child: get SIGTERM if this supervisor dies (even by SIGKILL), so no rank is orphaned."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the launcher's process-group kill still ends the job


def run(argv: List[str]) -> int:
    """Run `argv` (sharing our file descriptors, which carry the MPI launcher's connection)."""
    if not argv:
        print("usage: python -m ember.kvstore.supervise COMMAND [ARGS...]", file=sys.stderr)
        return 2
    if hasattr(signal, "SIGUSR1"):
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # the launcher's "a peer failed" notice
    try:
        child = subprocess.Popen(argv, close_fds=False,
                                 preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    except OSError as e:
        print(f"ember.kvstore.supervise: cannot start {argv[0]!r}: {e}", file=sys.stderr)
        return 127

    def forward(signum, frame):
        child.send_signal(signum)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    code = child.wait()
    rank = jobdir.launcher_rank()
    if code < 0:
        reason = f"rank {rank} ({argv[0]}) was killed by {signal.Signals(-code).name}"
        print(f"ember.kvstore.supervise: {reason}", file=sys.stderr, flush=True)
        jobdir.report_failure(rank, reason)
        return 128 - code
    if code != 0:
        jobdir.report_failure(rank, f"rank {rank} ({argv[0]}) exited with status {code}")
    return code


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
