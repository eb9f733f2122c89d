"""The main job (examples/train_digits_gluon.py) on a short run: it trains, exports, reloads with equal
predictions, prints the memory plan and writes a trace."""
import importlib.util
import json
import os
import sys

import pytest

pytest.importorskip("sklearn")
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def test_short_run_trains_exports_and_reloads(tmp_path, capsys):
    sys.path.insert(0, EXAMPLES)
    spec = importlib.util.spec_from_file_location("train_digits_gluon", os.path.join(EXAMPLES, "train_digits_gluon.py"))
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    rc = demo.main(["--epochs", "3", "--out-dir", str(tmp_path), "--min-accuracy", "0.85"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "epoch  3:" in out and "test accuracy:" in out
    assert "predictions equal" in out and "bytes allocated" in out
    assert (tmp_path / "digits_cnn-symbol.json").exists() and (tmp_path / "digits_cnn-0003.params").exists()
    events = json.loads((tmp_path / "digits_gluon_step_trace.json").read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert any(e.get("ph") == "X" for e in events)
