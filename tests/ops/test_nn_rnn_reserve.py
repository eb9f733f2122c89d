"""The RNN backward that reuses the forward's reserve equals the one that recomputes the forward.

Every mode, one and two layers, both directions, with and without state gradients, sequence
lengths, dropout between layers, an LSTM projection and cell-state clipping: float64, so the two
BPTT implementations must agree to rounding."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import run_op  # noqa: E402
from rnn_recompute_reference import recompute_backward  # noqa: E402

from ember import ops  # noqa: E402
from ember.ops.nn_rnn import _backward_layout, _backward_outputs, param_size, reserve_size  # noqa: E402

CASES = [
    # mode, layers, bidirectional, extra attrs
    ("lstm", 1, False, {}),
    ("lstm", 2, True, {}),
    ("lstm", 2, False, {"state_outputs": False}),
    ("lstm", 2, True, {"use_sequence_length": True}),
    ("lstm", 2, True, {"projection_size": 3}),
    ("lstm", 2, True, {"projection_size": 3, "use_sequence_length": True}),
    ("lstm", 3, True, {"p": 0.4}),
    ("lstm", 1, True, {"lstm_state_clip_min": -0.4, "lstm_state_clip_max": 0.5}),
    ("gru", 1, False, {}),
    ("gru", 2, True, {}),
    ("gru", 2, True, {"use_sequence_length": True, "p": 0.3}),
    ("rnn_tanh", 2, True, {}),
    ("rnn_tanh", 2, True, {"use_sequence_length": True}),
    ("rnn_relu", 2, True, {"state_outputs": False}),
    ("rnn_relu", 1, False, {"use_sequence_length": True}),
]


def _case(mode, layers, bi, extra, seed, t=5, n=3, i=4, h=5):
    rng = np.random.default_rng(seed)
    attrs = dict(dict(mode=mode, state_size=h, num_layers=layers, bidirectional=bi, state_outputs=True), **extra)
    a = ops.get("RNN").parse_attrs(attrs)
    d, r = (2 if bi else 1), (a["projection_size"] or h)
    ins = [rng.standard_normal((t, n, i)), rng.standard_normal(param_size(a, i)) * 0.6,
           rng.standard_normal((layers * d, n, r))]
    if mode == "lstm":
        ins.append(rng.standard_normal((layers * d, n, h)))
    if a["use_sequence_length"]:
        ins.append(np.array([t, 2.0, 1.0][:n]))
    return attrs, a, ins, rng


@pytest.mark.parametrize("mode,layers,bi,extra", CASES)
def test_reserve_backward_equals_recomputing_backward(mode, layers, bi, extra):
    attrs, a, ins, rng = _case(mode, layers, bi, extra, seed=len(str(extra)) + layers)
    outs = run_op("RNN", ins, attrs, is_train=True, seed=3)
    n_vis = ops.get("RNN").visible_outputs(a)
    assert outs[-1].shape == (reserve_size(a, ins[0].shape[0], ins[0].shape[1]),)
    out_grads = [rng.standard_normal(o.shape) for o in outs[:n_vis]]
    hidden = outs[n_vis:]                            # [dropout_mask,] reserve
    bwd_inputs = list(ins) + out_grads + hidden
    assert len(bwd_inputs) == len(_backward_layout(a))
    shapes = [x.shape for x in ins[:len(_backward_outputs(a))]]
    got = [np.full(s, np.nan) for s in shapes]
    ctx = ops.OpContext(np, is_train=True)
    ops.get("_backward_RNN").kernel("cpu")(ctx, a, bwd_inputs, got, [])
    want = [np.full(s, np.nan) for s in shapes]
    recompute_backward(ctx, a, bwd_inputs, want)
    for name, g, w in zip(_backward_outputs(a), got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=name)


def test_reserve_of_float16_data_is_float32():
    """float16 gates and states would cost the gradients precision: the reserve stays float32."""
    op = ops.get("RNN")
    a = op.parse_attrs({"mode": "lstm", "state_size": 4, "num_layers": 1})
    _, out_dtypes, _ = op.dtypes(a, [np.float16] * 4)
    assert np.dtype(out_dtypes[0]) == np.float16 and np.dtype(out_dtypes[-1]) == np.float32


def test_float16_backward_close_to_float64():
    attrs, a, ins, rng = _case("lstm", 2, True, {}, seed=5)
    outs64 = run_op("RNN", ins, attrs)
    outs16 = run_op("RNN", [x.astype(np.float16) for x in ins], attrs, dtype_check=False)
    n_vis = ops.get("RNN").visible_outputs(a)
    out_grads = [rng.standard_normal(o.shape) for o in outs64[:n_vis]]
    shapes = [x.shape for x in ins[:len(_backward_outputs(a))]]
    ctx = ops.OpContext(np, is_train=True)
    kernel = ops.get("_backward_RNN").kernel("cpu")
    want = [np.empty(s) for s in shapes]
    kernel(ctx, a, list(ins) + out_grads + [outs64[-1]], want, [])
    got = [np.empty(s, np.float16) for s in shapes]
    kernel(ctx, a, [x.astype(np.float16) for x in list(ins) + out_grads] + [outs16[-1]], got, [])
    for name, g, w in zip(_backward_outputs(a), got, want):
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=0.05, atol=0.05, err_msg=name)
