"""Distributed stores: real MPI jobs started through the launcher (mpiexec on this machine)."""
from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("mpi4py")
from ember.kvstore import launch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "_dist_worker.py")
MARKER = "EMBER_KV_TEST_RUN"  # conftest.py finds leftover processes by this variable

try:
    launch.find_mpiexec()
    HAVE_MPIEXEC = True
except SystemExit:
    HAVE_MPIEXEC = False
needs_mpiexec = pytest.mark.skipif(not HAVE_MPIEXEC, reason="no mpiexec (pip install mpich)")


def _worker_module():
    spec = importlib.util.spec_from_file_location("_dist_worker_ref", WORKER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_job(tmp_path, workers, scenario, steps=4, servers=0, env=None, limit=150):
    """Launch an MPI job; kill its whole process group if it overruns. Returns (rc, output)."""
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, HERE]), **(env or {}))
    full_env[MARKER] = str(os.getpid())
    cmd = [sys.executable, "-m", "ember.kvstore.launch", "-n", str(workers), "-s", str(servers),
           "--job-timeout", str(limit), sys.executable, WORKER, scenario, str(tmp_path), str(steps)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=full_env, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=limit + 30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"MPI job {scenario} hung past {limit + 30}s:\n{out[-3000:]}")
    return proc.returncode, out


def errors(tmp_path):
    return {p.name: p.read_text() for p in tmp_path.glob("error*.txt")}


@needs_mpiexec
@pytest.mark.parametrize("workers,fusion_env", [
    # default: the small keys fused into one buffer, the 256 KB key alone (EMBER_KVSTORE_FUSION_KEY_LIMIT);
    # updater written against the engine contract
    (2, {}),
    # mixed fused/unfused + chunked, and a push without updater before the updater is set
    (3, {"EMBER_KVSTORE_FUSION_THRESHOLD": "200", "EMBER_KVSTORE_CHUNK_BYTES": "4096", "KV_TEST_PREPUSH": "1"}),
    pytest.param(2, {"KV_TEST_OPTIMIZER": "1", "EMBER_KVSTORE_FUSION_THRESHOLD": "0"}, id="2-mx.optimizer.SGD-unfused"),
])
def test_dist_sync_workers_match_single_process_sgd_on_summed_gradient(tmp_path, workers, fusion_env):
    steps = 4
    rc, out = run_job(tmp_path, workers, "sync", steps, env=fusion_env)
    assert rc == 0, out[-3000:]
    ref = _worker_module()
    for key in ref.SHAPES:
        if fusion_env.get("KV_TEST_PREPUSH"):
            expected = sum(ref.initial(key, r + 1) for r in range(workers))
        else:
            expected = ref.initial(key, 0)  # worker 0's init wins
        for step in range(steps):
            expected = expected - ref.LR * sum(ref.gradient(key, r, step) for r in range(workers))
        per_rank = [np.load(tmp_path / f"rank{r}.npz")[str(key)] for r in range(workers)]
        for r, got in enumerate(per_rank):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=f"key {key} rank {r}")
            np.testing.assert_array_equal(got, per_rank[0])  # identical on every worker


@needs_mpiexec
@pytest.mark.parametrize("native", ["1", "0"])  # the native queue / the Python communication thread
def test_window_sizes_give_identical_results(tmp_path, native):
    # small chunks: every push is many collectives, so window 3 really has 3 in flight
    env = {"EMBER_KVSTORE_FUSION_THRESHOLD": "200", "EMBER_KVSTORE_CHUNK_BYTES": "4096",
           "EMBER_KVSTORE_NATIVE": native}
    results = {}
    for window in (1, 3):
        out = tmp_path / f"w{window}"
        out.mkdir()
        rc, log = run_job(out, 3, "sync", 3, env=dict(env, EMBER_KVSTORE_WINDOW=str(window)))
        assert rc == 0, log[-3000:]
        for r in range(3):
            assert int(np.load(out / f"max_in_flight{r}.npy")) == window
        results[window] = np.load(out / "rank0.npz")
    for key in results[1].files:
        np.testing.assert_array_equal(results[1][key], results[3][key], err_msg=f"key {key}")


def _check_pushpull_results(tmp_path, workers):
    ref = _worker_module()
    for r in range(workers):
        got = np.load(tmp_path / f"rank{r}.npz")
        for key in ref.SHAPES:
            sums = [sum(ref.gradient(key, w, step) for w in range(workers)) for step in range(4)]
            for name, expected in [("inplace", sums[0]), ("inplace_pull", sums[0]), ("out", sums[1]),
                                   ("out_value", ref.gradient(key, r, 1)), ("out_pull", sums[1]),
                                   ("perkey", sums[3]), ("perkey_push", np.full(ref.SHAPES[key], 3.0 * workers)),
                                   ("updated", sums[1] - ref.LR * sums[2])]:
                np.testing.assert_allclose(got[f"{name}_{key}"], expected, rtol=1e-5, atol=1e-5,
                                           err_msg=f"{name} of key {key} on rank {r}")
        assert "cannot sum bool over MPI" in str(got["bool_error"]) and "'flags'" in str(got["bool_error"])
        first = list(ref.SHAPES)[0]  # pushed after the refusal, through the updater: weight - LR * sum
        np.testing.assert_allclose(got["after_bool"], got[f"updated_{first}"] - ref.LR * workers, rtol=1e-5, atol=1e-5)
    return [np.load(tmp_path / f"rank{r}.npz") for r in range(workers)]


@needs_mpiexec
@pytest.mark.parametrize("threshold", ["0", "200", "67108864"])  # direct per key / mixed / all fused
def test_pushpull_semantics_with_a_later_pull(tmp_path, threshold):
    workers = 2
    rc, out = run_job(tmp_path, workers, "pushpull", env={"EMBER_KVSTORE_FUSION_THRESHOLD": threshold})
    assert rc == 0, out[-3000:]
    for got in _check_pushpull_results(tmp_path, workers):
        assert 1 <= int(got["max_in_flight"]) <= 2  # the default window
        # unfused keys went through the native queue (all fused: only the lone-key calls did)
        assert 1 <= int(got["native_max_in_flight"]) <= 2


@needs_mpiexec
def test_native_queue_and_python_path_give_identical_results(tmp_path):
    # small chunks: the 256 KB key is 63 collectives, so window 3 really has 3 in flight
    env = {"EMBER_KVSTORE_FUSION_THRESHOLD": "0", "EMBER_KVSTORE_CHUNK_BYTES": "4096", "EMBER_KVSTORE_WINDOW": "3"}
    results = {}
    for native in ("0", "1"):
        out = tmp_path / f"native{native}"
        out.mkdir()
        rc, log = run_job(out, 3, "pushpull", env=dict(env, EMBER_KVSTORE_NATIVE=native))
        assert rc == 0, log[-3000:]
        results[native] = _check_pushpull_results(out, 3)
        for got in results[native]:
            assert int(got["native_max_in_flight"]) == (3 if native == "1" else -1)
    for r in range(3):
        for name in results["0"][r].files:
            if "max_in_flight" not in name:
                np.testing.assert_array_equal(results["0"][r][name], results["1"][r][name],
                                              err_msg=f"{name} on rank {r}")


@needs_mpiexec
@pytest.mark.parametrize("threshold", ["0", "67108864"])  # per key (native) / small keys fused
def test_repeated_list_calls_with_the_same_arrays_give_current_sums(tmp_path, threshold):
    workers = 2
    rc, out = run_job(tmp_path, workers, "replay", env={"EMBER_KVSTORE_FUSION_THRESHOLD": threshold})
    assert rc == 0, out[-3000:]
    ref = _worker_module()
    for r in range(workers):
        got = np.load(tmp_path / f"rank{r}.npz")
        assert int(got["replays"]) == 6  # steps 2 and 3 replay push, pushpull(out=...) and pushpull()
        for step in range(4):
            for key in ref.SHAPES:
                expected = sum(ref.gradient(key, w, step) for w in range(workers))
                for name in ("push", "out", "inplace"):
                    np.testing.assert_allclose(got[f"{name}{step}_{key}"], expected, rtol=1e-5, atol=1e-5,
                                               err_msg=f"{name} of key {key} at step {step} on rank {r}")


@needs_mpiexec
@pytest.mark.parametrize("native", ["1", "0"], ids=["native_queue", "python_thread"])
def test_a_failed_value_fails_its_push_and_later_ones_without_hanging(tmp_path, native):
    started = time.monotonic()
    rc, out = run_job(tmp_path, 2, "bad_value", env={"EMBER_KVSTORE_TIMEOUT": "60", "EMBER_KVSTORE_NATIVE": native},
                      limit=90)
    assert rc != 0
    assert time.monotonic() - started < 50, "a rank waited for the timeout instead of the failure notice"
    assert "ValueError: the gradient of key 0 could not be computed" in out, out[-3000:]
    later = (tmp_path / "later1.txt").read_text()
    assert "KVStoreCommError" in later and "stopped after an earlier failure" in later, later
    assert "kvstore push of key 0 failed on this worker" in later, later
    text = errors(tmp_path)["error0.txt"]
    assert "KVStoreCommError" in text and "rank 1 (" in text, text


@needs_mpiexec
def test_calls_inside_an_engine_bulk_group_see_the_ops_it_holds(tmp_path):
    workers = 2
    rc, out = run_job(tmp_path, workers, "bulk")
    assert rc == 0, out[-3000:]
    for r in range(workers):
        got = np.load(tmp_path / f"rank{r}.npz")
        np.testing.assert_array_equal(got["k0"], np.full(1000, sum(w + 1.0 for w in range(workers))))
        np.testing.assert_array_equal(got["k1"], np.full(8, sum(w + 1.0 for w in range(workers))))
        np.testing.assert_array_equal(got["k2"], np.full(8, sum(w + 10.0 for w in range(workers))))
        np.testing.assert_array_equal(got["pushpull"], np.full(1000, sum(w + 100.0 for w in range(workers))))


@needs_mpiexec
def test_close_finishes_pending_work_and_releases_thread_and_communicator(tmp_path):
    workers = 2
    rc, out = run_job(tmp_path, workers, "close")
    assert rc == 0, out[-3000:]
    for r in range(workers):
        got = np.load(tmp_path / f"rank{r}.npz")
        np.testing.assert_array_equal(got["out"], np.full(8, sum(w + 1.0 for w in range(workers))))
        assert "closed" in str(got["refused"])
        assert bool(got["native"])  # the closed store let go of its native queue
        assert int(got["threads_after"]) <= int(got["threads_before"])  # 20 stores made and closed


@needs_mpiexec
def test_dist_sync_mismatched_shapes_fail_on_every_worker(tmp_path):
    rc, out = run_job(tmp_path, 2, "mismatch")
    assert rc != 0
    errs = errors(tmp_path)
    assert set(errs) == {"error0.txt", "error1.txt"}, out[-3000:]
    for text in errs.values():
        assert "KVStoreShapeError" in text and "disagree" in text and "ranks [1]" in text


@needs_mpiexec
def test_workers_pushing_different_keys_in_one_call_get_an_error_not_garbage(tmp_path):
    rc, out = run_job(tmp_path, 2, "diverge")
    assert rc != 0
    errs = errors(tmp_path)
    assert set(errs) == {"error0.txt", "error1.txt"}, out[-3000:]
    for text in errs.values():
        assert "KVStoreCommError" in text and "pushed different keys" in text


@needs_mpiexec
@pytest.mark.parametrize("notice", ["job_dir", "timeout"])
def test_killed_worker_makes_the_others_exit_with_a_clear_error(tmp_path, notice):
    env = {"EMBER_KVSTORE_TIMEOUT": "3"}
    if notice == "timeout":  # no shared job directory (as across hosts): the watchdog timeout
        env["EMBER_KVSTORE_JOB_DIR"] = "none"
    else:
        env["EMBER_KVSTORE_TIMEOUT"] = "60"  # the job directory notice must come long before this
    started = time.monotonic()
    rc, out = run_job(tmp_path, 3, "die", env=env, limit=90)
    assert rc != 0
    assert "rank 1 (" in out and "killed by SIGKILL" in out, out[-3000:]
    errs = errors(tmp_path)
    assert set(errs) == {"error0.txt", "error2.txt"}, out[-3000:]
    for text in errs.values():
        if notice == "timeout":
            assert "KVStoreTimeoutError" in text and "EMBER_KVSTORE_TIMEOUT" in text and "died" in text, text
        else:
            assert "KVStoreCommError" in text and "rank 1 (" in text and "killed by SIGKILL" in text, text
    if notice == "job_dir":
        assert time.monotonic() - started < 50


@needs_mpiexec
def test_a_rank_failing_before_mpi_starts_stops_the_job_quickly(tmp_path):
    started = time.monotonic()
    rc, out = run_job(tmp_path, 2, "die_before_init", limit=120)
    assert rc != 0
    assert time.monotonic() - started < 60, "survivors waited for the start-up timeout"
    assert "rank 1 (" in out and "exited with status 7" in out, out[-3000:]


@needs_mpiexec
@pytest.mark.parametrize("env", [
    {},  # a picklable updater function shipped to the server
    pytest.param({"KV_TEST_OPTIMIZER": "1"}, id="mx.optimizer.SGD"),
])
def test_dist_async_regression_converges(tmp_path, env):
    rc, out = run_job(tmp_path, 2, "async", steps=50, servers=1, env=env)
    assert rc == 0, out[-3000:]
    for r in range(2):
        res = np.load(tmp_path / f"rank{r}.npz")
        # plain SGD on a well-conditioned least-squares problem: far below the initial error
        initial_error = np.abs(res["w_true"]).max()
        assert np.abs(res["w"] - res["w_true"]).max() < 0.05 * initial_error, (res["w"], res["w_true"])


@needs_mpiexec
def test_dist_async_push_of_a_failed_value_is_skipped_and_training_goes_on(tmp_path):
    rc, out = run_job(tmp_path, 2, "async", steps=50, servers=1, env={"KV_TEST_FAIL_STEP": "5"})
    assert rc == 0, out[-3000:]
    failed = (tmp_path / "async_failed.txt").read_text()
    assert "ValueError: the gradient of 'w' could not be computed" in failed, failed
    for r in range(2):
        res = np.load(tmp_path / f"rank{r}.npz")
        assert np.abs(res["w"] - res["w_true"]).max() < 0.05 * np.abs(res["w_true"]).max(), (res["w"], res["w_true"])


@needs_mpiexec
def test_dist_async_server_exits_when_its_workers_die(tmp_path):
    # no job directory (as across hosts): the server notices the missing heartbeats
    rc, out = run_job(tmp_path, 2, "async_die", servers=1,
                      env={"EMBER_KVSTORE_TIMEOUT": "3", "EMBER_KVSTORE_HEARTBEAT": "0.5",
                           "EMBER_KVSTORE_JOB_DIR": "none"}, limit=90)
    assert rc != 0
    assert "ember.kvstore.server: KVStoreTimeoutError" in out and "probably died" in out, out[-3000:]


def _server_pids():
    """Server processes of this session's jobs (not their supervisors)."""
    spec = importlib.util.spec_from_file_location("_kvstore_procs", os.path.join(HERE, "_procs.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return [pid for pid, cmd in mod.tagged_processes(os.getpid())
            if "ember.kvstore.server" in cmd and "ember.kvstore.supervise" not in cmd]


@needs_mpiexec
def test_dist_async_workers_exit_with_an_error_when_the_server_dies(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, HERE]), EMBER_KVSTORE_TIMEOUT="60")
    env[MARKER] = str(os.getpid())
    cmd = [sys.executable, "-m", "ember.kvstore.launch", "-n", "2", "-s", "1", "--job-timeout", "90",
           sys.executable, WORKER, "async_server_dies", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        deadline = time.time() + 60
        while not all((tmp_path / f"ready{r}").exists() for r in range(2)):
            assert proc.poll() is None and time.time() < deadline, "workers never got ready"
            time.sleep(0.1)
        servers = _server_pids()
        assert len(servers) == 1
        os.kill(servers[0], signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode != 0
    errs = errors(tmp_path)
    assert set(errs) == {"error0.txt", "error1.txt"}, out[-3000:]
    for text in errs.values():  # told through the job directory, long before the timeout
        assert "KVStoreCommError" in text and "rank 2 (" in text and "killed by SIGKILL" in text, text


def test_launcher_rank_is_read_from_mpich_open_mpi_or_pmix_variables(monkeypatch):
    from ember.kvstore import jobdir
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert jobdir.launcher_rank() == "?"
    monkeypatch.setenv("PMIX_RANK", "3")
    assert jobdir.launcher_rank() == "3"
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "2")  # Open MPI sets both: same value in practice
    assert jobdir.launcher_rank() == "2"
    monkeypatch.setenv("PMI_RANK", "1")
    assert jobdir.launcher_rank() == "1"


def test_launcher_builds_one_mpmd_job_with_roles():
    cmd = launch.build_command("/usr/bin/mpiexec", 3, 2, ["python", "train.py", "--lr", "0.1"],
                               {"EMBER_KVSTORE_TIMEOUT": "7"})
    text = " ".join(cmd)
    assert cmd[:2] == ["/usr/bin/mpiexec", "-disable-auto-cleanup"]
    workers, servers = text.split(" : ")
    assert "-n 3" in workers and "-env DMLC_ROLE worker" in workers and "train.py --lr 0.1" in workers
    assert "-n 2" in servers and "-env DMLC_ROLE server" in servers and "ember.kvstore.server" in servers
    for part in (workers, servers):
        assert "-env DMLC_NUM_WORKER 3" in part and "-env DMLC_NUM_SERVER 2" in part
        assert "-env EMBER_KVSTORE_TIMEOUT 7" in part and "ember.kvstore.supervise" in part
    ompi = launch.build_command("mpirun", 1, 0, ["python", "t.py"], {}, openmpi=True)
    assert "-x" in ompi and "DMLC_ROLE=worker" in ompi and ":" not in ompi
    assert "--oversubscribe" in ompi  # 3 workers on 2 cores run, as with MPICH
    assert "--oversubscribe" not in launch.build_command("mpirun", 1, 0, ["python"], {}, hostfile="h", openmpi=True)
    with pytest.raises(SystemExit, match="no command"):
        launch.build_command("mpiexec", 2, 0, [], {})
    with pytest.raises(SystemExit, match="-n must be at least 1"):
        launch.build_command("mpiexec", 0, 0, ["python"], {})
