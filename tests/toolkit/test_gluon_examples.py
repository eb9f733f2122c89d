"""The Gluon examples (examples/lstm_char_lm.py, examples/image_folder_cnn.py) in their --quick mode:
they learn (held-out perplexity / training loss go down), and leave no worker process or temporary
file behind, also when a run stops early or fails."""
import glob
import importlib.util
import os
import tempfile

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _children():
    """PIDs of this process's live (non-zombie) child processes, from /proc."""
    me, kids = os.getpid(), []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = open(stat).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            kids.append(int(stat.split("/")[2]))
    return kids


def test_lstm_char_lm_quick_learns_and_samples(capsys):
    lm = _load("lstm_char_lm")
    text = lm.stdlib_docstrings()
    assert len(text) > 50_000 and text == lm.stdlib_docstrings()  # enough text, the same every run
    result = lm.main(["--quick"])
    ppl = result["perplexities"]
    # untrained: about the vocabulary size (uniform guesses); 25 steps cut it by more than half
    assert 0.7 * result["vocab"] < ppl[0] < 1.3 * result["vocab"]
    assert ppl[-1] < 0.5 * ppl[0]
    losses = result["losses"]
    assert sum(losses[-5:]) < sum(losses[:5])
    assert result["sample"].startswith("Return the ") and len(result["sample"]) == len("Return the ") + 40
    out = capsys.readouterr().out
    assert "held-out perplexity before training" in out and "sample:" in out


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """tempfile's folder for this test only, so leftovers of the example can be seen."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_image_folder_cnn_quick_learns_and_cleans_up(private_tmp, capsys):
    pytest.importorskip("PIL")
    example = _load("image_folder_cnn")
    before = set(_children())
    result = example.main(["--quick"])
    assert result["epoch_losses"][-1] < result["epoch_losses"][0]
    assert len(result["accuracies"]) == 3 and all(0.0 <= a <= 1.0 for a in result["accuracies"])
    assert set(_children()) <= before  # the DataLoader's two workers are gone
    assert list(private_tmp.iterdir()) == []  # the image folder is removed
    assert "wrote 192 training and 48 test PNGs" in capsys.readouterr().out


def test_image_folder_cnn_stopping_early_or_failing_leaves_nothing(private_tmp, monkeypatch):
    pytest.importorskip("PIL")
    example = _load("image_folder_cnn")
    before = set(_children())
    example.main(["--quick", "--epochs", "1", "--max-steps", "2"])  # leaves the training loop with `break`
    assert set(_children()) <= before and list(private_tmp.iterdir()) == []

    def fail(net, loader):
        next(iter(loader))  # workers started for the test set, then the error
        raise RuntimeError("evaluation failed")
    monkeypatch.setattr(example, "accuracy", fail)
    with pytest.raises(RuntimeError, match="evaluation failed"):
        example.main(["--quick", "--epochs", "1", "--max-steps", "1"])
    assert set(_children()) <= before and list(private_tmp.iterdir()) == []
