"""mx.rnn against recordings from real MXNet 1.9.1 (tests/data/make_rnn_fixtures.py)."""
import json
import os
import random

import numpy as np
import pytest

import ember as mx

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "rnn")
ARR = np.load(os.path.join(DATA, "rnn_cells.npz"))
with open(os.path.join(DATA, "rnn_meta.json")) as _f:
    META = json.load(_f)
N, T, I, H = 2, 3, 4, 5


def _step_cell(name):
    if name == "lstm":
        return mx.rnn.LSTMCell(H, prefix="lstm_")
    if name == "gru":
        return mx.rnn.GRUCell(H, prefix="gru_")
    if name == "rnn_relu":
        return mx.rnn.RNNCell(H, activation="relu", prefix="rnn_")
    if name == "stack":
        s = mx.rnn.SequentialRNNCell()
        s.add(mx.rnn.LSTMCell(H, prefix="s0_"))
        s.add(mx.rnn.GRUCell(H, prefix="s1_"))
        return s
    if name == "bi":
        return mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(H, prefix="l_"), mx.rnn.GRUCell(H, prefix="r_"),
                                        output_prefix="bi_")
    return mx.rnn.ResidualCell(mx.rnn.GRUCell(I, prefix="res_"))


@pytest.mark.parametrize("name", sorted(META["steps"]))
def test_step_cells_match_mxnet(name):
    info = META["steps"][name]
    out, _ = _step_cell(name).unroll(T, mx.sym.Variable("data"), merge_outputs=info["merge"])
    net = out if info["merge"] else mx.sym.Group(out)
    assert net.list_arguments() == info["args"]
    assert net.list_outputs() == info["outputs"]
    args = {n: mx.nd.array(ARR[f"{name}/arg/{n}"]) for n in info["args"]}
    outs = net.bind(mx.cpu(), args).forward()
    for k, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), ARR[f"{name}/out_{k}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_fused_cell_matches_mxnet(mode):
    cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode=mode, bidirectional=True, prefix=f"{mode}_")
    pieces = cell.unpack_weights({f"{mode}_parameters": mx.nd.array(ARR[f"{mode}/packed"])})
    assert list(pieces) == META["fused"][mode]["pieces"]
    for n, v in pieces.items():
        np.testing.assert_array_equal(v.asnumpy(), ARR[f"{mode}/piece/{n}"])
    # ember's fused RNN operator gives what MXNet's unfused cells give for the same packed weights
    begin = cell.begin_state()
    out, _ = cell.unroll(T, mx.sym.Variable("data"), begin_state=begin, layout="TNC", merge_outputs=True)
    ex = out.bind(mx.cpu(), {"data": mx.nd.array(ARR[f"{mode}/data"]),
                             f"{mode}_parameters": mx.nd.array(ARR[f"{mode}/packed"])})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), ARR[f"{mode}/unfused_out"], rtol=1e-5, atol=1e-6)
    init = mx.rnn.FusedRNN(mx.init.Constant(0.5), H, 2, mode, True, forget_bias=3.0)
    arr = mx.nd.zeros(ARR[f"{mode}/packed"].shape)
    init._init_weight(mx.init.InitDesc(f"{mode}_parameters", global_init=mx.init.Uniform()), arr)
    np.testing.assert_array_equal(arr.asnumpy(), ARR[f"{mode}/init"])


def test_bucket_iterator_matches_mxnet_batch_for_batch():
    random.seed(11)
    np.random.seed(11)
    it = mx.rnn.BucketSentenceIter(META["bucket_sentences"], batch_size=3, buckets=[4, 8], invalid_label=-1)
    keys = []
    for k, batch in enumerate(it):
        keys.append(batch.bucket_key)
        np.testing.assert_array_equal(batch.data[0].asnumpy(), ARR[f"bucket/data_{k}"])
        np.testing.assert_array_equal(batch.label[0].asnumpy(), ARR[f"bucket/label_{k}"])
    assert keys == META["bucket_keys"]


def test_encode_sentences_matches_mxnet():
    (coded, vocab), (coded2, vocab2) = META["encode"]
    assert list(mx.rnn.encode_sentences([["a", "b", "c"], ["c", "d", "a", "e"]], invalid_label=0,
                                        start_label=0)) == [coded, vocab]
    got = mx.rnn.encode_sentences([["x", "a", "y"]], vocab={"a": 7}, unknown_token="<unk>", start_label=2)
    assert list(got) == [coded2, vocab2]
