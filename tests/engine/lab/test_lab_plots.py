"""The lab's plots and table: what is drawn is the replay's own data (needs matplotlib, a test dependency)."""
import json
import sys

import numpy as np
import pytest

from ember.engine import lab
from ember.engine.lab import plots
from ember.engine.lab.__main__ import main


def _diamond():
    # a -> (b, c) -> d; b is long; each op writes a buffer, so the memory curve has steps
    return lab.Workload.from_edges([1.0, 3.0, 1.0, 1.0], [0, 0, 1, 2], [1, 2, 3, 3], names=["a", "b", "c", "d"],
                                   out_nbytes=[100, 50, 70, 10])


def test_gantt_draws_one_bar_per_op_on_its_worker_row():
    wl = _diamond()
    res = lab.simulate(wl, workers=2, policy="priority")
    ax = plots.gantt(wl, res, label_ops=4)
    bars = {}
    for k, coll in enumerate(ax.collections):
        for path in coll.get_paths():
            x0, y0 = path.vertices.min(axis=0)
            x1, _ = path.vertices.max(axis=0)
            bars[(round(x0, 6), round(x1, 6))] = round(y0 + 0.4)
    want = {(round(s * 1e3, 6), round(e * 1e3, 6)) for s, e in zip(res.start_s, res.end_s)}
    assert set(bars) == want
    assert [t.get_text() for t in ax.get_yticklabels()] == ["q0 w0", "q0 w1"]
    assert sorted(t.get_text() for t in ax.texts) == ["a", "b", "c", "d"]
    assert "makespan 5000.000 ms" in ax.get_title()


def test_gantt_refuses_a_result_of_another_workload():
    wl = _diamond()
    other = lab.simulate(lab.Workload.from_edges([1.0], [], []), workers=1)
    with pytest.raises(ValueError, match="1 ops but the workload 4"):
        plots.gantt(wl, other)


def test_memory_curve_is_the_replays_curve():
    wl = _diamond()
    res = lab.simulate(wl, workers=1, policy="fifo")
    ax = plots.memory([res], labels=["one worker"])
    line = ax.lines[0]
    assert np.allclose(line.get_xdata(), res.memory_t * 1e3)
    assert np.allclose(line.get_ydata(), res.memory_bytes / 2**20)
    assert "peak" in ax.get_legend().get_texts()[0].get_text()


def test_makespan_vs_workers_and_table_match_compare_rows():
    wl = lab.synthetic.fork_join(stages=3, width=6, seed=0)
    rows = lab.compare(wl, workers=[1, 2, 4], policies=["priority", "lifo"])
    ax = plots.makespan_vs_workers(rows)
    by_label = {ln.get_label(): ln for ln in ax.lines}
    assert set(by_label) == {"priority", "lifo", "lower bound"}
    pri = sorted((r["workers"], r["makespan_s"] * 1e3) for r in rows if r["policy"] == "priority")
    assert np.allclose(by_label["priority"].get_ydata(), [m for _, m in pri])
    text = plots.table(rows).splitlines()
    assert len(text) == 1 + len(rows) and text[1].split()[:2] == [str(rows[0]["workers"]), rows[0]["policy"]]


def test_cli_writes_plots(tmp_path, capsys):
    wl_trace = tmp_path / "t.jsonl"
    import ember as mx
    with lab.record(str(wl_trace)):
        a = mx.nd.ones((8, 8))
        for _ in range(5):
            a = a * 2 + 1
        a.wait_to_read()
    png = tmp_path / "replay.png"
    assert main(["replay", str(wl_trace), "--workers", "2", "--json", "--plot", str(png)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ops"] >= 10 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    png2 = tmp_path / "compare.png"
    assert main(["compare", str(wl_trace), "--workers", "1", "2", "--policies", "fifo", "lifo",
                 "--plot", str(png2)]) == 0
    assert "makespan ms" in capsys.readouterr().out and png2.stat().st_size > 1000


def test_clear_error_without_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plots.memory(lab.simulate(_diamond(), workers=1))
