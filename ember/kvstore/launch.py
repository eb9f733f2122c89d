"""Start a distributed job on MPI, like MXNet's tools/launch.py:

    python -m ember.kvstore.launch -n 4 [-s 2] [-H hostfile] python train.py [args...]

Runs `mpiexec` with W worker processes (the command) and S server processes
(`python -m ember.kvstore.server`, needed by 'dist_async'), as one MPMD job:
ranks 0..W-1 are workers, W..W+S-1 servers.  Every process gets DMLC_ROLE, DMLC_NUM_WORKER,
DMLC_NUM_SERVER and the EMBER_KVSTORE_* settings given with --env or --timeout.  Each rank
runs under `ember.kvstore.supervise`, so when one is killed the others report the failure
and exit instead of being killed silently.  The launcher's exit status is mpiexec's; Ctrl-C or
SIGTERM stops the whole job.  A job directory (EMBER_KVSTORE_JOB_DIR, removed at the end) lets
the ranks of a single-host job learn at once that one of them failed (see jobdir.py).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional


def find_mpiexec(explicit: Optional[str] = None) -> str:
    """mpiexec to use: --mpiexec, $EMBER_MPIEXEC, next to this Python (the mpich wheel), or PATH."""
    for cand in (explicit, os.environ.get("EMBER_MPIEXEC"),
                 os.path.join(os.path.dirname(sys.executable), "mpiexec"), shutil.which("mpiexec")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise SystemExit("ember.kvstore.launch: no mpiexec found; pip install 'ember[dist]' (mpi4py, mpich) "
                     "or pass --mpiexec PATH")


def is_open_mpi(mpiexec: str) -> bool:
    """Open MPI needs other flags (-x for env, --allow-run-as-root, --oversubscribe) than MPICH's hydra."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "open mpi" in (out.stdout + out.stderr).lower() or "open-mpi" in (out.stdout + out.stderr).lower()


def build_command(mpiexec: str, workers: int, servers: int, command: List[str],
                  env: Dict[str, str], hostfile: Optional[str] = None, openmpi: bool = False) -> List[str]:
    """The mpiexec command line of the job (one MPMD block for workers, one for servers)."""
    if workers < 1:
        raise SystemExit("ember.kvstore.launch: -n must be at least 1")
    if servers < 0:
        raise SystemExit("ember.kvstore.launch: -s must not be negative")
    if not command:
        raise SystemExit("ember.kvstore.launch: no command given (e.g. python train.py)")
    common = dict(env, DMLC_NUM_WORKER=str(workers), DMLC_NUM_SERVER=str(servers))
    supervise = [sys.executable, "-m", "ember.kvstore.supervise"]

    def env_flags(role: str) -> List[str]:
        flags = []
        for k, v in sorted(dict(common, DMLC_ROLE=role).items()):
            flags += ["-x", f"{k}={v}"] if openmpi else ["-env", k, v]
        return flags

    cmd = [mpiexec]
    if openmpi:
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")  # Open MPI refuses root without it
        if hostfile:
            cmd += ["--hostfile", hostfile]
        else:  # one machine: run -n processes even past its cores, as MPICH does (Open MPI refuses)
            cmd.append("--oversubscribe")
    else:
        cmd.append("-disable-auto-cleanup")  # survivors report a dead peer themselves
        if hostfile:
            cmd += ["-f", hostfile]
    cmd += ["-n", str(workers)] + env_flags("worker") + supervise + list(command)
    if servers:
        cmd += [":", "-n", str(servers)] + env_flags("server") + supervise + [sys.executable, "-m",
                                                                            "ember.kvstore.server"]
    return cmd


def run(cmd: List[str], timeout: Optional[float] = None) -> int:
    """Run the job in its own process group; stop the whole group on signals or timeout."""
    proc = subprocess.Popen(cmd, start_new_session=True)

    def stop(signum=None, frame=None):
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"ember.kvstore.launch: job exceeded --job-timeout {timeout}s; stopping it", file=sys.stderr)
            stop()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return 124
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        try:  # nothing of the job may outlive the launcher
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ember.kvstore.launch", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--num-workers", type=int, required=True, help="number of worker processes")
    p.add_argument("-s", "--num-servers", type=int, default=0, help="number of server processes (dist_async)")
    p.add_argument("-H", "--hostfile", help="MPI host file (one host per line)")
    p.add_argument("--timeout", type=float, help="EMBER_KVSTORE_TIMEOUT: seconds before a silent peer counts as dead")
    p.add_argument("--job-timeout", type=float, help="stop the whole job after this many seconds")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="extra environment variable")
    p.add_argument("--mpiexec", help="mpiexec to use (default: the one next to this Python, then PATH)")
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command and exit")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the worker command, e.g. python train.py")
    args = p.parse_args(argv)
    env = {}
    for item in args.env:
        if "=" not in item:
            p.error(f"--env {item!r}: expected NAME=VALUE")
        k, v = item.split("=", 1)
        env[k] = v
    if args.timeout is not None:
        env["EMBER_KVSTORE_TIMEOUT"] = str(args.timeout)
    # (a job directory given as 'none' disables the failure notices)
    for k in ("EMBER_KVSTORE_TIMEOUT", "EMBER_KVSTORE_FUSION_THRESHOLD", "EMBER_KVSTORE_CHUNK_BYTES",
              "EMBER_KVSTORE_HEARTBEAT", "EMBER_KVSTORE_STARTUP_TIMEOUT", "EMBER_KVSTORE_JOB_DIR"):
        if k in os.environ and k not in env:
            env[k] = os.environ[k]
    mpiexec = find_mpiexec(args.mpiexec)
    made_dir = None
    if "EMBER_KVSTORE_JOB_DIR" not in env and not args.dry_run:
        made_dir = env["EMBER_KVSTORE_JOB_DIR"] = tempfile.mkdtemp(prefix="ember-kv-job-")
    cmd = build_command(mpiexec, args.num_workers, args.num_servers, args.command, env,
                        args.hostfile, is_open_mpi(mpiexec))
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    try:
        return run(cmd, args.job_timeout)
    finally:
        if made_dir:
            shutil.rmtree(made_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
