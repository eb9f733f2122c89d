"""Record legacy mx.rnn behaviour from real MXNet 1.9.1 (run with the anchors venv, not ember).

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_rnn_fixtures.py

Writes tests/data/rnn/rnn_cells.npz and rnn_meta.json:
- step cells (`C` in lstm, gru, rnn_relu, stack, bi, residual): the unrolled graph's argument names
  and output names (meta), its argument values `C/arg/<name>` and outputs `C/out_K`, with MXNet's
  default begin states (zeros with an unknown batch size).
- fused (lstm / gru, 2 layers, bidirectional): the packed vector `F/packed`, the names
  `unpack_weights` gives (meta, in order) with each piece `F/piece/<name>`, and the outputs of the
  unfused cells (`unfuse()`, weights from `pack_weights(unpack_weights(...))`) `F/unfused_out`
  for data `F/data`; MXNet's FusedRNN initializer (init=Constant(0.5), forget_bias=3) result `F/init`.
- BucketSentenceIter: with random/np.random seeded, every batch's data, label and bucket key.
- encode_sentences results (meta).
tests/rnn/test_rnn_mxnet_fixtures.py replays them.  Inputs come from numpy.random.default_rng(20261203).
"""
from __future__ import annotations

import json
import os
import random

import numpy as np
import mxnet as mx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rnn")
R = np.random.default_rng(20261203)
N, T, I, H = 2, 3, 4, 5


def uniform(shape):
    return R.uniform(-0.5, 0.5, size=shape).astype(np.float32)


def step_cases():
    def lstm():
        return mx.rnn.LSTMCell(H, prefix="lstm_")

    def gru():
        return mx.rnn.GRUCell(H, prefix="gru_")

    def rnn_relu():
        return mx.rnn.RNNCell(H, activation="relu", prefix="rnn_")

    def stack():
        s = mx.rnn.SequentialRNNCell()
        s.add(mx.rnn.LSTMCell(H, prefix="s0_"))
        s.add(mx.rnn.GRUCell(H, prefix="s1_"))
        return s

    def bi():
        return mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(H, prefix="l_"), mx.rnn.GRUCell(H, prefix="r_"),
                                        output_prefix="bi_")

    def residual():
        return mx.rnn.ResidualCell(mx.rnn.GRUCell(I, prefix="res_"))
    return {"lstm": (lstm, True), "gru": (gru, False), "rnn_relu": (rnn_relu, True), "stack": (stack, False),
            "bi": (bi, True), "residual": (residual, False)}


def main():
    os.makedirs(HERE, exist_ok=True)
    arrays, meta = {}, {"steps": {}, "fused": {}}
    for name, (make, merge) in step_cases().items():
        cell = make()
        with mx.name.NameManager():  # auto names ('concat0') counted per case, as the replaying test does
            out, _ = cell.unroll(T, mx.sym.Variable("data"), merge_outputs=merge)
        net = out if merge else mx.sym.Group(out)
        arg_shapes, _, _ = net.infer_shape(data=(N, T, I))
        args = {n: mx.nd.array(uniform(s)) for n, s in zip(net.list_arguments(), arg_shapes)}
        outs = net.bind(mx.cpu(), args).forward()
        meta["steps"][name] = {"merge": merge, "args": net.list_arguments(), "outputs": net.list_outputs()}
        for n, v in args.items():
            arrays[f"{name}/arg/{n}"] = v.asnumpy()
        for k, o in enumerate(outs):
            arrays[f"{name}/out_{k}"] = o.asnumpy()

    for mode in ("lstm", "gru"):
        cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode=mode, bidirectional=True, prefix=f"{mode}_")
        gates = 4 if mode == "lstm" else 3
        size = 2 * gates * H * ((I + H + 2) + (2 * H + H + 2))
        packed = uniform((size,))
        pieces = cell.unpack_weights({f"{mode}_parameters": mx.nd.array(packed)})
        meta["fused"][mode] = {"pieces": list(pieces)}
        arrays[f"{mode}/packed"] = packed
        for n, v in pieces.items():
            arrays[f"{mode}/piece/{n}"] = v.asnumpy()
        stack = cell.unfuse()
        weights = stack.pack_weights(pieces)
        out, _ = stack.unroll(T, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
        data = uniform((T, N, I))
        feed = dict(weights, data=mx.nd.array(data))
        arrays[f"{mode}/data"] = data
        arrays[f"{mode}/unfused_out"] = out.bind(mx.cpu(), {k: feed[k] for k in out.list_arguments()}).forward()[0].asnumpy()
        init = mx.init.FusedRNN(mx.init.Constant(0.5), H, 2, mode, True, forget_bias=3.0)
        arr = mx.nd.zeros((size,))
        # (MXNet 1.9.1 cannot rebuild a FusedRNN with a non-None init from its JSON: call it directly)
        init._init_weight(mx.init.InitDesc(f"{mode}_parameters", global_init=mx.init.Uniform()), arr)
        arrays[f"{mode}/init"] = arr.asnumpy()

    rng = np.random.RandomState(5)
    sentences = [list(rng.randint(1, 30, n)) for n in [3] * 9 + [6] * 7 + [8] * 5 + [12] * 2]
    meta["bucket_sentences"] = [[int(t) for t in s] for s in sentences]
    random.seed(11)
    np.random.seed(11)
    it = mx.rnn.BucketSentenceIter(sentences, batch_size=3, buckets=[4, 8], invalid_label=-1)
    keys = []
    for k, batch in enumerate(it):
        keys.append(batch.bucket_key)
        arrays[f"bucket/data_{k}"] = batch.data[0].asnumpy()
        arrays[f"bucket/label_{k}"] = batch.label[0].asnumpy()
    meta["bucket_keys"] = keys

    coded, vocab = mx.rnn.encode_sentences([["a", "b", "c"], ["c", "d", "a", "e"]], invalid_label=0, start_label=0)
    coded2, vocab2 = mx.rnn.encode_sentences([["x", "a", "y"]], vocab={"a": 7}, unknown_token="<unk>", start_label=2)
    meta["encode"] = [[coded, vocab], [coded2, vocab2]]

    np.savez_compressed(os.path.join(HERE, "rnn_cells.npz"), **arrays)
    with open(os.path.join(HERE, "rnn_meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    print(f"wrote {len(arrays)} arrays to {HERE}")


if __name__ == "__main__":
    main()
