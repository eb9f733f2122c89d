"""Smoke test of the main job (examples/train_digits.py) on one short epoch."""
import importlib.util
import json
import os

import pytest

pytest.importorskip("sklearn")
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "train_digits.py")


def test_one_epoch_runs_and_writes_a_trace(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLE)
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    trace = tmp_path / "step.json"
    rc = demo.main(["--epochs", "2", "--batch-size", "64", "--trace", str(trace), "--min-accuracy", "0.6"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "Epoch[1] Train-accuracy=" in out and "Epoch[1] Validation-accuracy=" in out
    assert "test accuracy:" in out and "Total " in out and "bytes allocated" in out
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert any(e.get("ph") == "X" for e in events)
