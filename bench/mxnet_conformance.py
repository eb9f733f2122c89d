"""MXNet 1.9.1 conformance: run MXNet's own unit-test files against real MXNet and against ember, side by side.

Each test file runs out of tree under pytest twice: once in the MXNet 1.9.1 venv (results cached, since they
never change) and once with `import mxnet` redirected to ember by a shim package that this script writes into a
temporary directory at run time. Nothing of MXNet's is copied into the repository: the tests are read from an
extracted MXNet tree (default /work/mx191/tests/python/unittest) and the shim lives only in a temp dir.

    python3 bench/mxnet_conformance.py                      # the default file list
    python3 bench/mxnet_conformance.py --files test_symbol test_io --json /tmp/conf.json
    python3 bench/mxnet_conformance.py --files test_engine -v   # also list ember-only passes and MXNet failures

The recorder plugin puts back, for MXNet's test code, the numpy 1.x aliases numpy 2 removed (np.int, np.NaN,
...): MXNet's side runs numpy 1.x, ember's numpy 2, and a test should measure the library, not its own calls.

Per file it prints 'ember passed / MXNet passed' (counting only tests that pass on MXNet) and, for each test that
passes on MXNet but not on ember, the first line of ember's error. A hung test cannot stop the run: each test has
a pytest-timeout limit, each pytest process a wall-clock limit after which the test then running is marked as hung
and the file is resumed past it.

Needs, in both interpreters: pytest, pytest-timeout and nose (MXNet 1.9.1's tests import nose.tools), e.g.
`python3 -m pip install pytest pytest-timeout nose` and the same with the MXNet venv's python, plus scipy there
(test_metric imports it; keep that venv's numpy<1.24: `pip install "numpy<1.24" "scipy<1.11"`); and MXNet's
tests/python/common and tests/python/train folders next to the unittest folder (test_symbol, test_infer_shape
and test_module import them): `git show 1.9.1:tests/python/<dir>/<file>` from an MXNet clone.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
DEFAULT_UNITTEST = Path("/work/mx191/tests/python/unittest")
MXNET_PY = Path(os.environ.get("ANCHOR_VENVS", os.path.expanduser("~/.cache/ember-anchors"))) / "mxnet/bin/python"
CACHE = Path(os.environ.get("EMBER_CONFORMANCE_CACHE", os.path.expanduser("~/.cache/ember-conformance")))
DEFAULT_FILES = ["test_infer_shape", "test_exc_handling", "test_executor", "test_module", "test_engine",
                 "test_autograd", "test_init", "test_metric", "test_symbol", "test_io"]

# The shim: `import mxnet` gives the ember module itself, and every `mxnet.X.Y` the module `ember.X.Y`
# (the same object, never a second copy), falling back to an attribute path for names that are attributes in
# ember (mxnet.nd -> ember.nd).  A name ember lacks fails with "No module named 'mxnet.X'", as it should.
SHIM_INIT = '''"""Conformance shim written by ember's bench/mxnet_conformance.py: `mxnet` is ember."""
import importlib
import importlib.abc
import importlib.util
import sys
import types

import ember


class _EmberAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves mxnet.<path> to the already-imported (or importable) ember.<path> module object."""

    def __init__(self):
        self._found = {}

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("mxnet."):
            return None
        rest = fullname[len("mxnet."):]
        real = "ember." + rest
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as err:
            if err.name is not None and not real.startswith(err.name) and not err.name.startswith(real):
                raise
            module = ember
            for part in rest.split("."):
                module = getattr(module, part, None)
                if not isinstance(module, types.ModuleType):
                    return None
        self._found[fullname] = module
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return self._found.pop(spec.name)

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _EmberAlias())
sys.modules["mxnet"] = ember
'''

# A pytest plugin that records each test as it goes (JSON lines), so a killed process still leaves its results.
PLUGIN = '''"""Conformance recorder written by ember's bench/mxnet_conformance.py."""
import json
import os

import numpy as _np

_OUT = os.environ["CONFORMANCE_RECORD"]

# MXNet 1.9.1's own test code uses numpy 1.x APIs that numpy 2 removed (np.int, np.NaN, np.round_, np.sometrue, quantile's
# interpolation=, nonzero of a 0-d array, unique's 1-D inverse,
# arange into an unsigned dtype from a negative bound): they are put back for that code, so that a test measures the library
# and not its own numpy calls (a no-op on numpy 1.x, where MXNet's side runs).
for _name, _value in (("int", int), ("float", float), ("bool", bool), ("object", object), ("complex", complex),
                      ("str", str), ("NaN", _np.nan), ("NAN", _np.nan), ("Inf", _np.inf), ("Infinity", _np.inf),
                      ("PINF", _np.inf), ("NINF", -_np.inf)):
    if not hasattr(_np, _name):
        setattr(_np, _name, _value)
for _name, _value in (("round_", _np.round), ("sometrue", _np.any), ("alltrue", _np.all), ("product", _np.prod),
                      ("cumproduct", _np.cumprod)):
    if not hasattr(_np, _name):
        setattr(_np, _name, _value)


def _numpy1_keyword(fn):
    """numpy 1.x's `interpolation=` of quantile/percentile, which numpy 2.4 removed, as `method=`."""
    def call(*args, interpolation=None, **kwargs):
        if interpolation is not None:
            kwargs["method"] = interpolation
        return fn(*args, **kwargs)
    return call


try:
    _np.quantile([0.0], 0.5, interpolation="linear")
except TypeError:
    for _name in ("quantile", "percentile", "nanquantile", "nanpercentile"):
        setattr(_np, _name, _numpy1_keyword(getattr(_np, _name)))
if not hasattr(_np, "in1d"):
    _np.in1d = lambda ar1, ar2, assume_unique=False, invert=False: _np.isin(
        ar1, ar2, assume_unique=assume_unique, invert=invert).ravel()
if not hasattr(_np, "msort"):
    _np.msort = lambda a: _np.sort(a, axis=0)


def _numpy1_list(fn):
    """numpy 1.x's broadcast_arrays: a list (numpy 2 gives a tuple)."""
    def call(*args, **kwargs):
        res = fn(*args, **kwargs)
        return list(res) if isinstance(res, tuple) else res
    return call


if isinstance(_np.broadcast_arrays(_np.zeros(1)), tuple):
    _np.broadcast_arrays = _numpy1_list(_np.broadcast_arrays)


def _numpy1_nonzero(fn):
    """numpy 1.x's nonzero of a 0-d array (as of its 1-d view), which numpy 2 refuses."""
    def nonzero(a):
        return fn(_np.atleast_1d(a)) if _np.ndim(a) == 0 else fn(a)
    return nonzero


try:
    _np.nonzero(_np.array(1))
except ValueError:
    _np.nonzero = _numpy1_nonzero(_np.nonzero)


def _numpy1_arange(fn):
    """numpy 1.x's arange into an integer dtype that a bound overflows (uint8 from -100; numpy 2 refuses):
    the first two values cast, then their difference repeated, wrapping, as numpy 1.x filled it."""
    def arange(*args, dtype=None, **kwargs):
        try:
            return fn(*args, dtype=dtype, **kwargs)
        except OverflowError:
            if dtype is None or _np.dtype(dtype).kind not in "iu" or kwargs or not 1 <= len(args) <= 3:
                raise
            start, step = (0, 1) if len(args) == 1 else (args[0], args[2] if len(args) == 3 else 1)
            n = len(fn(*args))
            first, second = int(start), int(start + step)
            return (first + fn(n, dtype=_np.int64) * (second - first)).astype(dtype)
    return arange


try:
    _np.arange(-1, 1, 1, dtype=_np.uint8)
except OverflowError:
    _np.arange = _numpy1_arange(_np.arange)


def _numpy1_unique(fn):
    """numpy 1.x's unique: a 1-D inverse for axis=None (numpy 2 shapes it like the input)."""
    def unique(ar, *args, **kwargs):
        res = fn(ar, *args, **kwargs)
        inverse = kwargs.get("return_inverse", len(args) > 1 and args[1])
        if inverse and kwargs.get("axis", args[3] if len(args) > 3 else None) is None:
            k = 2 if kwargs.get("return_index", args[0] if args else False) else 1
            res = res[:k] + (res[k].reshape(-1),) + res[k + 1:]
        return res
    return unique


if _np.unique(_np.zeros((2, 2)), return_inverse=True)[1].ndim == 2:
    _np.unique = _numpy1_unique(_np.unique)


def _write(rec):
    with open(_OUT, "a") as f:
        f.write(json.dumps(rec) + "\\n")


def _reason(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None and crash.message:
        text = crash.message
    elif isinstance(report.longrepr, tuple):
        text = str(report.longrepr[-1])
    else:
        text = str(report.longrepr or "")
        lines = [ln for ln in text.splitlines() if ln.startswith("E ")]
        text = lines[0][1:] if lines else (text.strip().splitlines() or [""])[-1]
    text = text.strip().splitlines()
    return text[0][:300] if text else ""


def pytest_runtest_logstart(nodeid, location):
    _write({"event": "start", "nodeid": nodeid})


def pytest_runtest_logreport(report):
    rec = {"event": "report", "nodeid": report.nodeid, "when": report.when, "outcome": report.outcome}
    if report.failed or report.skipped:
        rec["reason"] = _reason(report)
    if hasattr(report, "wasxfail"):
        rec["xfail"] = True
    _write(rec)


def pytest_collectreport(report):
    if report.failed:
        _write({"event": "collect_error", "nodeid": report.nodeid, "reason": _reason(report)})
'''


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def fold(records: list[dict]) -> tuple[dict[str, dict], Optional[str]]:
    """Per test: outcome 'passed' / 'failed' / 'skipped' and the first failing phase's reason; collection error."""
    tests: dict[str, dict] = {}
    collect_error = None
    for rec in records:
        if rec["event"] == "collect_error":
            collect_error = rec["reason"] or "collection error"
        elif rec["event"] == "start":
            tests.setdefault(rec["nodeid"], {"outcome": "hung", "reason": ""})
        elif rec["event"] == "report":
            t = tests.setdefault(rec["nodeid"], {"outcome": "hung", "reason": ""})
            if t["outcome"] == "hung":
                t["outcome"] = "passed"
            if rec["outcome"] == "failed" and t["outcome"] != "failed":
                t["outcome"], t["reason"] = "failed", f"[{rec['when']}] {rec.get('reason', '')}"
            elif rec["outcome"] == "skipped" and t["outcome"] == "passed":
                t["outcome"], t["reason"] = "skipped", rec.get("reason", "")
    return tests, collect_error


def run_file(python: str, test_file: Path, env: dict, workdir: Path, test_timeout: int,
             file_timeout: int) -> dict:
    """Run one test file under pytest in `python`; resume past a test that hangs the whole process."""
    record = workdir / f"{test_file.stem}-{os.getpid()}-{time.monotonic_ns()}.jsonl"
    record.write_text("")
    env = dict(env, CONFORMANCE_RECORD=str(record))
    hung: dict[str, dict] = {}
    deselect: list[str] = []
    t0 = time.time()
    while True:
        cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "_conformance_plugin",
               "-c", str(workdir / "pytest.ini"), "--rootdir", str(test_file.parent),
               f"--timeout={test_timeout}", "--timeout-method=signal", str(test_file)]
        for nodeid in deselect:
            cmd += ["--deselect", nodeid]
        try:
            subprocess.run(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=file_timeout, start_new_session=True)
            break
        except subprocess.TimeoutExpired:
            records = [json.loads(ln) for ln in record.read_text().splitlines() if ln.strip()]
            tests, _ = fold(records)
            running = [n for n, t in tests.items() if t["outcome"] == "hung" and n not in hung]
            if not running:
                break
            for n in running:
                hung[n] = {"outcome": "failed", "reason": f"hung: process killed after {file_timeout}s"}
            deselect = [n for n in tests]
    records = [json.loads(ln) for ln in record.read_text().splitlines() if ln.strip()]
    record.unlink()
    tests, collect_error = fold(records)
    for n, t in tests.items():
        if t["outcome"] == "hung":
            t.update(hung.get(n, {"outcome": "failed", "reason": "hung: no result"}))
    return {"tests": tests, "collect_error": collect_error, "seconds": round(time.time() - t0, 1)}


def write_support(workdir: Path, shim: bool) -> None:
    (workdir / "pytest.ini").write_text("[pytest]\n")
    (workdir / "_conformance_plugin.py").write_text(PLUGIN)
    if shim:
        (workdir / "shim" / "mxnet").mkdir(parents=True)
        (workdir / "shim" / "mxnet" / "__init__.py").write_text(SHIM_INIT)


def base_env(extra_paths: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MXNET_", "PYTEST_"))}
    env["PYTHONPATH"] = os.pathsep.join(extra_paths + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def mxnet_results(test_file: Path, args, workdir: Path) -> dict:
    """Real MXNet's results for one file, from the cache when the file is unchanged."""
    cache = CACHE / f"mxnet-{test_file.stem}.json"
    digest = file_digest(test_file)
    if cache.exists() and not args.refresh_mxnet:
        cached = json.loads(cache.read_text())
        if cached.get("digest") == digest and cached.get("test_timeout") == args.test_timeout:
            return cached
    env = base_env([str(workdir)])
    res = run_file(str(args.mxnet_python), test_file, env, workdir, args.test_timeout, args.file_timeout)
    res.update(digest=digest, test_timeout=args.test_timeout)
    CACHE.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(res, indent=1, sort_keys=True))
    return res


def ember_results(test_file: Path, args, workdir: Path) -> dict:
    env = base_env([str(workdir / "shim"), str(workdir), str(args.ember_root)])
    return run_file(sys.executable, test_file, env, workdir, args.test_timeout, args.file_timeout)


def compare(name: str, mx: dict, em: dict) -> dict:
    mx_pass = sorted(n for n, t in mx["tests"].items() if t["outcome"] == "passed")
    em_pass = {n for n, t in em["tests"].items() if t["outcome"] == "passed"}
    failing = {}
    for n in mx_pass:
        if n in em_pass:
            continue
        t = em["tests"].get(n)
        if t is None:
            reason = f"[collect] {em['collect_error']}" if em["collect_error"] else "not run on ember"
        else:
            reason = t["reason"] or t["outcome"]
        failing[n.split("::", 1)[-1]] = reason
    return {"file": name, "mxnet_passed": len(mx_pass), "ember_passed": len(mx_pass) - len(failing),
            "ember_only_passed": sorted(n.split("::", 1)[-1] for n in em_pass - set(mx_pass)),
            "mxnet_not_passed": {n.split("::", 1)[-1]: t["outcome"] + (": " + t["reason"] if t["reason"] else "")
                                 for n, t in mx["tests"].items() if t["outcome"] != "passed"},
            "mxnet_collect_error": mx["collect_error"], "failing_on_ember": failing,
            "ember_seconds": em["seconds"]}


def check_tools(python: str, what: str) -> None:
    r = subprocess.run([python, "-c", "import pytest, pytest_timeout, nose.tools"], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{what} ({python}) lacks pytest, pytest-timeout or nose: "
                 f"run `{python} -m pip install pytest pytest-timeout nose`\n{r.stderr.strip().splitlines()[-1]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--unittest", type=Path, default=DEFAULT_UNITTEST, help="MXNet 1.9.1's tests/python/unittest")
    ap.add_argument("--files", nargs="+", default=DEFAULT_FILES, help="test files (with or without .py)")
    ap.add_argument("--jobs", type=int, default=1, help="files run at once (the machine is shared: keep 1)")
    ap.add_argument("--json", type=Path, help="write the full comparison here")
    ap.add_argument("--test-timeout", type=int, default=120, help="seconds per test (pytest-timeout)")
    ap.add_argument("--file-timeout", type=int, default=1800, help="seconds per pytest process before a kill")
    ap.add_argument("--mxnet-python", type=Path, default=MXNET_PY)
    ap.add_argument("--ember-root", type=Path, default=REPO, help="checkout whose ember/ is measured")
    ap.add_argument("--refresh-mxnet", action="store_true", help="rerun MXNet even when cached")
    ap.add_argument("-v", "--verbose", action="store_true", help="also list ember-only passes, MXNet non-passes")
    args = ap.parse_args(argv)

    files = []
    for f in args.files:
        path = args.unittest / (f if f.endswith(".py") else f + ".py")
        if not path.exists():
            sys.exit(f"no such test file: {path}")
        files.append(path)
    for need in ("common/models.py", "train/test_bucketing.py"):
        if not (args.unittest.parent / need).exists():
            print(f"warning: {args.unittest.parent / need} is missing: extract tests/python/{need.split('/')[0]} "
                  "from MXNet's tag 1.9.1 next to the unittest folder (some test files import it)", file=sys.stderr)
    check_tools(str(args.mxnet_python), "MXNet's python")
    check_tools(sys.executable, "ember's python")

    def one(path: Path) -> dict:
        with tempfile.TemporaryDirectory(prefix="ember-conformance-") as tmp:
            workdir = Path(tmp)
            write_support(workdir, shim=True)
            mx = mxnet_results(path, args, workdir)
            em = ember_results(path, args, workdir)
        return compare(path.stem, mx, em)

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(one, files))

    total_mx = total_em = 0
    print(f"{'file':<22} {'ember / MXNet passed':>21} {'%':>5}")
    for r in results:
        total_mx += r["mxnet_passed"]
        total_em += r["ember_passed"]
        pct = 100.0 * r["ember_passed"] / r["mxnet_passed"] if r["mxnet_passed"] else 100.0
        print(f"{r['file']:<22} {r['ember_passed']:>10} / {r['mxnet_passed']:<8} {pct:5.0f}")
    pct = 100.0 * total_em / total_mx if total_mx else 100.0
    print(f"{'total':<22} {total_em:>10} / {total_mx:<8} {pct:5.0f}")
    for r in results:
        if r["mxnet_collect_error"]:
            print(f"\n{r['file']}: does not load on MXNet: {r['mxnet_collect_error']}")
        if r["failing_on_ember"] or args.verbose:
            print(f"\n{r['file']}: pass on MXNet, fail on ember ({len(r['failing_on_ember'])})")
            for name, reason in r["failing_on_ember"].items():
                print(f"  {name}: {reason}")
        if args.verbose:
            if r["ember_only_passed"]:
                print(f"\n{r['file']}: pass on ember only: {', '.join(r['ember_only_passed'])}")
            for name, why in r["mxnet_not_passed"].items():
                print(f"  (MXNet) {name}: {why}")
    if args.json:
        args.json.write_text(json.dumps({"total": {"ember_passed": total_em, "mxnet_passed": total_mx},
                                         "files": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
