"""Cells with their default begin states, zeros((0, H)): the batch size comes from the data at bind."""
import numpy as np

import ember as mx
from rnn_reference import lstm_step, rnn_step

N, T, I, H = 3, 4, 5, 6


def test_default_begin_state_is_zeros_with_unknown_batch():
    rng = np.random.RandomState(10)
    cell = mx.rnn.LSTMCell(H, prefix="lstm_")
    outputs, _ = cell.unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    assert sorted(a for a in outputs.list_arguments() if "begin" in a) == []  # zeros are not arguments
    _, out_shapes, _ = outputs.infer_shape(data=(N, T, I))
    assert out_shapes == [(N, T, H)]
    ex = outputs.simple_bind(mx.cpu(), data=(N, T, I))
    values = {k: rng.uniform(-0.5, 0.5, v.shape).astype(np.float32) for k, v in ex.arg_dict.items()}
    got = ex.forward(**{k: mx.nd.array(v) for k, v in values.items()})[0].asnumpy()
    h = c = np.zeros((N, H), np.float32)
    for t in range(T):
        h, c = lstm_step(values["data"][:, t], h, c, values, "lstm_")
        np.testing.assert_allclose(got[:, t], h, rtol=1e-5, atol=1e-6)


def test_fused_cell_binds_from_the_data_shape():
    cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode="gru", bidirectional=True, get_next_state=True, prefix="f_")
    outputs, states = cell.unroll(T, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    ex = mx.sym.Group([outputs] + states).simple_bind(mx.cpu(), data=(T, N, I))
    assert [o.shape for o in ex.outputs] == [(T, N, 2 * H), (4, N, H)]


def test_zoneout_outputs_start_from_unknown_zeros():
    cell = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(H, prefix="rnn_"), zoneout_outputs=0.5)
    outputs, _ = cell.unroll(2, [mx.sym.Variable("x0"), mx.sym.Variable("x1")])
    net = mx.sym.Group(outputs)
    ex = net.simple_bind(mx.cpu(), x0=(N, I), x1=(N, I))
    rng = np.random.RandomState(11)
    values = {k: rng.uniform(-0.5, 0.5, v.shape).astype(np.float32) for k, v in ex.arg_dict.items()}
    got = ex.forward(is_train=False, **{k: mx.nd.array(v) for k, v in values.items()})
    h = np.zeros((N, H), np.float32)
    for t, name in enumerate(("x0", "x1")):  # at inference zoneout keeps every new value
        h = rnn_step(values[name], h, values, "rnn_")
        np.testing.assert_allclose(got[t].asnumpy(), h, rtol=1e-5, atol=1e-6)
    trained = ex.forward(is_train=True)[0].asnumpy()
    new = rnn_step(values["x0"], np.zeros((N, H), np.float32), values, "rnn_")
    # in training each unit is the new output or the previous one (zeros before the first step)
    assert (np.isclose(trained, new, rtol=1e-5, atol=1e-6) | (trained == 0)).all()


def test_module_initializes_lstm_forget_bias():
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(H, forget_bias=2.0, prefix="l0_"))
    stack.add(mx.rnn.LSTMCell(H, forget_bias=2.0, prefix="l1_"))
    sym, _ = stack.unroll(1, mx.sym.Variable("data"), merge_outputs=True)
    mod = mx.mod.Module(sym, label_names=None, context=mx.cpu(0))
    mod.bind(data_shapes=[("data", (N, 1, I))], label_shapes=None)
    mod.init_params()
    arg_params = mod.get_params()[0]
    for prefix in ("l0_", "l1_"):
        np.testing.assert_array_equal(arg_params[prefix + "i2h_bias"].asnumpy(),
                                      np.r_[np.zeros(H), 2 * np.ones(H), np.zeros(2 * H)])
        assert np.abs(arg_params[prefix + "i2h_weight"].asnumpy()).max() > 0


def test_fused_cell_trains_in_a_module():
    # a next-token model on BucketSentenceIter batches: loss goes down with the fused LSTM
    rng = np.random.RandomState(12)
    sentences = [list(rng.randint(1, 8, 6)) for _ in range(32)]
    it = mx.rnn.BucketSentenceIter(sentences, batch_size=8, buckets=[6], invalid_label=0)
    cell = mx.rnn.FusedRNNCell(16, mode="lstm", prefix="lstm_")
    data = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=8, output_dim=8, name="embed")
    out, _ = cell.unroll(6, data, layout="NTC", merge_outputs=True)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(out, shape=(-1, 16)), num_hidden=8, name="pred")
    label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
    net = mx.sym.SoftmaxOutput(pred, label, name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    metric = mx.metric.Perplexity(ignore_label=None)
    mod.fit(it, num_epoch=1, eval_metric=metric, optimizer="adam", optimizer_params={"learning_rate": 0.01},
            initializer=mx.init.Xavier())
    first = dict(mod.score(it, mx.metric.Perplexity(ignore_label=None)))["perplexity"]
    mod.fit(it, num_epoch=15, begin_epoch=1, eval_metric=metric, optimizer="adam",
            optimizer_params={"learning_rate": 0.01}, force_init=False)
    last = dict(mod.score(it, mx.metric.Perplexity(ignore_label=None)))["perplexity"]
    assert last < first


def test_bucketing_module_trains_an_unrolled_lstm():
    # MXNet's lstm_bucketing recipe: one sym_gen per sentence length, weights shared by name
    rng = np.random.RandomState(13)
    vocab = 10
    sentences = [list(rng.randint(1, vocab, n)) for n in [4] * 24 + [7] * 24]
    it = mx.rnn.BucketSentenceIter(sentences, batch_size=8, buckets=[4, 7], invalid_label=0)
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(16, prefix="lstm_l0_"))
    stack.add(mx.rnn.GRUCell(16, prefix="gru_l1_"))

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data, input_dim=vocab, output_dim=8, name="embed")
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, 16)), num_hidden=vocab, name="pred")
        pred = mx.sym.SoftmaxOutput(pred, mx.sym.Reshape(label, shape=(-1,)), name="softmax")
        return pred, ("data",), ("softmax_label",)

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=it.default_bucket_key, context=mx.cpu())
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.02})
    before = dict(mod.score(it, mx.metric.Perplexity(ignore_label=None)))["perplexity"]
    mod.fit(it, num_epoch=10, eval_metric=mx.metric.Perplexity(ignore_label=None))
    after = dict(mod.score(it, mx.metric.Perplexity(ignore_label=None)))["perplexity"]
    assert after < 0.8 * before
    names = sorted(mod.get_params()[0])
    assert names == sorted(["embed_weight", "pred_weight", "pred_bias"]
                           + [f"{p}_{g}_{k}" for p in ("lstm_l0", "gru_l1") for g in ("i2h", "h2h")
                              for k in ("weight", "bias")])
