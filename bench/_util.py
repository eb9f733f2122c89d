"""Helpers shared by ember's own benchmarks: timing, JSON output, the MXNet anchor venv."""
import json
import os
import statistics
import subprocess
import sys
import time

ANCHORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "anchors")
VENVS = os.environ.get("ANCHOR_VENVS", os.path.expanduser("~/.cache/ember-anchors"))
MXNET_PY = os.path.join(VENVS, "mxnet", "bin", "python")
TORCH_PY = os.path.join(VENVS, "torch", "bin", "python")


def best_of(fn, reps=5):
    """Median wall time of `reps` calls of fn()."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def emit(bench, **results):
    print(json.dumps({"bench": bench, **results}))
    sys.stdout.flush()


def run_anchor(script, impl, args, python=None, env=None, timeout=300):
    """Run one of ../shared/anchors/bench/*.py and return its JSON record (None if unavailable)."""
    py = python or (MXNET_PY if impl in ("mxnet", "numpy") else TORCH_PY)
    if impl == "ember":
        py, impl_args = sys.executable, ["--impl", "mxnet", "--mx-module", "ember"]
    else:
        impl_args = ["--impl", impl]
    bench_dir = os.path.join(ANCHORS, "bench")
    if not os.path.exists(py) or not os.path.isdir(bench_dir):
        return None
    full_env = dict(os.environ)
    full_env.update(env or {})
    r = subprocess.run([py, script + ".py", *impl_args, *args], cwd=bench_dir, capture_output=True, text=True,
                       timeout=timeout, env=full_env)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"failed": impl, "stderr": r.stderr[-2000:]}
