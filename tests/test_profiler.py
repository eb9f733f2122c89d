"""mx.profiler's MXNet API: aggregate statistics (table and JSON, sorting, reset), the user's
Domain/Task/Frame/Event/Counter/Marker objects, custom operators' categories, memory samples."""
import json

import numpy as np
import pytest

import ember as mx
from ember import profiler


@pytest.fixture()
def running(tmp_path):
    """The profiler running into a fresh file, with nothing recorded before; stopped and emptied after."""
    profiler.set_state("stop")
    profiler.dump(True, str(tmp_path / "before.json"))
    profiler.set_config(filename=str(tmp_path / "trace.json"), aggregate_stats=True, profile_memory=True)
    profiler.set_state("run")
    yield tmp_path / "trace.json"
    profiler.set_state("stop")
    profiler.set_config(filename=str(tmp_path / "after.json"))
    profiler.dump(True)


def _stats(**kw):
    return json.loads(profiler.dumps(format="json", **kw))


def test_operator_counts_since_a_reset(running):
    mx.nd.ones((3, 3)).wait_to_read()
    profiler.dumps(reset=True)
    inp = mx.nd.zeros((100, 100))
    y = mx.nd.sqrt(inp)
    inp = inp + 1
    inp = inp + 1
    mx.nd.waitall()
    stats = _stats()
    ops = stats["Time"]["operator"]
    assert ops["sqrt"]["Count"] == 1 and ops["_plus_scalar"]["Count"] == 2 and ops["_zeros"]["Count"] == 1
    assert "_ones" not in ops   # before the reset
    row = ops["sqrt"]
    assert row["Min"] <= row["Avg"] <= row["Max"] and row["Total"] == pytest.approx(row["Avg"] * row["Count"])
    assert stats["Unit"] == {"Time": "ms", "Memory": "kB"}
    assert y.shape == (100, 100)


@pytest.mark.parametrize("sort_by,key", [("total", "Total"), ("avg", "Avg"), ("min", "Min"), ("max", "Max"),
                                         ("count", "Count")])
@pytest.mark.parametrize("ascending", [False, True])
def test_each_category_is_sorted_by_the_chosen_statistic(running, sort_by, key, ascending):
    for n in (1, 2, 3):
        for _ in range(n):
            (mx.nd.ones((50, 50)) * n).wait_to_read()
    ev = profiler.Event("step")
    for _ in range(3):
        ev.start()
        ev.stop()
    mixed = profiler.Domain("mixed")   # a range and a counter in one domain sort together
    task, counter = mixed.new_task("t"), mixed.new_counter("c", 1000)
    task.start()
    task.stop()
    counter += 5
    for category, rows in _stats(sort_by=sort_by, ascending=ascending)["Time"].items():
        values = [r[key] for r in rows.values()]
        assert values == sorted(values, reverse=not ascending), category


def test_bad_arguments_to_dumps_raise_assertion_errors(running):
    mx.nd.ones((2,)).wait_to_read()
    with pytest.raises(AssertionError, match="format"):
        profiler.dumps(format="xml")
    with pytest.raises(AssertionError, match="sort_by"):
        profiler.dumps(sort_by="median")
    table = profiler.dumps()
    assert table.startswith("Profile Statistics:") and "operator" in table


def test_tasks_frames_and_events_are_ranges_in_their_domain(running):
    domain = profiler.Domain("PythonDomain")
    task, frame, event = domain.new_task("load"), profiler.Frame(domain, "iteration"), profiler.Event("ev")
    for r in (task, frame, event):
        r.start()
    mx.nd.ones((10, 10)).wait_to_read()
    for r in (task, frame, event):
        r.stop()
    time = _stats()["Time"]
    assert set(time["PythonDomain"]) == {"load", "iteration"} and time["event"]["ev"]["Count"] == 1
    with pytest.raises(RuntimeError, match="without being started"):
        task.stop()


def test_nothing_is_recorded_while_paused_or_stopped(running):
    profiler.dumps(reset=True)
    ev = profiler.Event("hidden")
    profiler.pause()
    ev.start()
    ev.stop()
    mx.nd.sqrt(mx.nd.ones((4,))).wait_to_read()
    profiler.resume()
    assert profiler.state() == "run"
    stats = _stats()["Time"]
    assert "event" not in stats and "sqrt" not in stats.get("operator", {})
    profiler.set_state("stop")
    ev.start()
    ev.stop()
    assert "event" not in _stats()["Time"]


def test_counters_and_markers(running):
    domain = profiler.Domain("D")
    counter = domain.new_counter("c", 5)
    counter += 3
    counter -= 10
    counter.increment(2)
    row = _stats()["Time"]["D"]["c"]
    assert (row["Count"], row["Min"], row["Max"]) == (4, -2, 8)
    domain.new_marker("here").mark("process")
    with pytest.raises(ValueError, match="scope"):
        profiler.Marker(domain, "m").mark("galaxy")
    events = json.load(open(profiler.dump(False)))["traceEvents"]
    assert [e["s"] for e in events if e.get("ph") == "i" and e["name"] == "here"] == ["p"]
    assert [e["args"]["c"] for e in events if e.get("ph") == "C" and e["name"] == "c"] == [5, 8, -2, 0]


def test_memory_samples_are_reported_in_kilobytes(running):
    keep = mx.nd.ones((256, 1024))   # 1 MiB in use
    keep.wait_to_read()
    memory = _stats()["Memory"]["Device Storage"]["Memory: cpu(0)"]
    assert memory["Max"] >= 1024 and set(memory) == {"Count", "Min", "Max", "Avg"}


def test_dump_keeps_records_until_finished(running):
    mx.nd.ones((8,)).wait_to_read()
    path = profiler.dump(False)
    first = json.load(open(path))["traceEvents"]
    mx.nd.ones((8,)).wait_to_read()
    second = json.load(open(profiler.dump(False)))["traceEvents"]
    assert len(second) > len(first)
    profiler.dump(True)
    assert not any(e.get("ph") == "X" for e in json.load(open(profiler.dump(False)))["traceEvents"])


class _AddOne(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        mx.nd.zeros((10, 10)).wait_to_read()
        self.assign(out_data[0], req[0], in_data[0] + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register("profiled_add_one")
class _AddOneProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        return _AddOne()


def test_custom_operator_code_and_its_ops_are_named_after_it(running):
    profiler.dumps(reset=True)
    x = mx.nd.array(np.arange(4.0))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="profiled_add_one")
    y.backward()
    mx.nd.waitall()
    custom = _stats()["Time"]["Custom Operator"]
    assert {"profiled_add_one::pure_python", "_backward_profiled_add_one::pure_python",
            "profiled_add_one::_zeros", "profiled_add_one::_plus_scalar"} <= set(custom)
    np.testing.assert_array_equal(x.grad.asnumpy(), np.ones(4))
