"""mx.rnn's data helpers (encode_sentences, BucketSentenceIter) and RNN checkpoints."""
import os

import numpy as np
import pytest

import ember as mx


def test_encode_sentences_builds_a_vocabulary():
    sentences = [["a", "b", "c"], ["b", "d"]]
    coded, vocab = mx.rnn.encode_sentences(sentences, invalid_label=1, start_label=0)
    # ids from start_label, skipping invalid_label
    assert vocab == {"\n": 1, "a": 0, "b": 2, "c": 3, "d": 4}
    assert coded == [[0, 2, 3], [2, 4]]


def test_encode_sentences_with_a_vocabulary_and_unknown_token():
    vocab = {"a": 0, "b": 1}
    coded, out = mx.rnn.encode_sentences([["a", "x", "y", "b"]], vocab=vocab, unknown_token="<unk>", start_label=5)
    # as MXNet 1.9.1: each unknown occurrence gives unknown_token the next id (the last one stays)
    assert out["<unk>"] == 6 and coded == [[0, 5, 6, 1]]
    coded, out = mx.rnn.encode_sentences([["a", "b", "c"], ["b", "c", "d"]], vocab={"a": 1, "b": 2, "c": 3},
                                         unknown_token="UNK")
    assert out == {"a": 1, "b": 2, "c": 3, "UNK": 0} and coded == [[1, 2, 3], [2, 3, 0]]
    with pytest.raises(AssertionError, match="Unknown token z"):
        mx.rnn.encode_sentences([["z"]], vocab={"a": 0})


def _sentences():
    rng = np.random.RandomState(0)
    lengths = [3] * 7 + [5] * 4 + [9] * 2  # 9 is longer than every bucket below
    return [list(rng.randint(1, 20, n)) for n in lengths]


def test_bucket_iterator_batches_labels_and_padding():
    it = mx.rnn.BucketSentenceIter(_sentences(), batch_size=2, buckets=[4, 6], invalid_label=-1)
    assert it.buckets == [4, 6] and it.default_bucket_key == 6
    assert it.provide_data[0].shape == (2, 6) and it.provide_label[0].name == "softmax_label"
    batches = list(it)
    assert len(batches) == 3 + 2  # 7 sentences of bucket 4 -> 3 full batches, 4 of bucket 6 -> 2
    assert sorted(b.bucket_key for b in batches) == [4, 4, 4, 6, 6]
    for b in batches:
        data, label = b.data[0].asnumpy(), b.label[0].asnumpy()
        assert data.shape == (2, b.bucket_key) == label.shape
        assert b.provide_data[0].shape == data.shape
        np.testing.assert_array_equal(label[:, :-1], data[:, 1:])  # the label is the next token
        np.testing.assert_array_equal(label[:, -1], -1)
        real = 3 if b.bucket_key == 4 else 5
        np.testing.assert_array_equal(data[:, real:], -1)  # padded with invalid_label
        assert (data[:, :real] > 0).all()
    with pytest.raises(StopIteration):
        it.next()
    it.reset()
    assert len(list(it)) == 5


def test_bucket_iterator_time_major_and_default_buckets():
    it = mx.rnn.BucketSentenceIter(_sentences(), batch_size=3, layout="TN")
    assert it.buckets == [3, 5]  # lengths with at least batch_size sentences
    batch = it.next()
    assert batch.data[0].shape == (batch.bucket_key, 3)
    assert it.provide_data[0].shape == (5, 3)
    with pytest.raises(ValueError, match="layout"):
        mx.rnn.BucketSentenceIter(_sentences(), batch_size=2, layout="NC")


def _fused_model():
    cell = mx.rnn.FusedRNNCell(3, num_layers=1, mode="gru", prefix="g_")
    begin = cell.begin_state(func=mx.sym.Variable)
    out, _ = cell.unroll(2, mx.sym.Variable("data"), begin_state=begin, layout="TNC", merge_outputs=True)
    size = 3 * 3 * (4 + 3 + 2)
    args = {"g_parameters": mx.nd.array(np.random.rand(size)), "fc_weight": mx.nd.ones((2, 2))}
    return cell, out, args


def test_rnn_checkpoint_round_trip(tmp_path):
    cell, sym, args = _fused_model()
    prefix = str(tmp_path / "model")
    aux = {"bn_moving_mean": mx.nd.zeros((2,))}
    mx.rnn.save_rnn_checkpoint(cell, prefix, 3, sym, args, aux)
    saved = mx.nd.load(prefix + "-0003.params")
    assert "arg:g_parameters" not in saved and "arg:g_l0_i2h_r_weight" in saved  # written unpacked
    assert "arg:fc_weight" in saved and "aux:bn_moving_mean" in saved
    sym2, args2, aux2 = mx.rnn.load_rnn_checkpoint([cell], prefix, 3)
    assert sym2.tojson() == sym.tojson()
    assert sorted(args2) == sorted(args)
    for k in args:
        np.testing.assert_array_equal(args2[k].asnumpy(), args[k].asnumpy())
    np.testing.assert_array_equal(aux2["bn_moving_mean"].asnumpy(), np.zeros(2))


def test_do_rnn_checkpoint_every_period(tmp_path):
    cell, sym, args = _fused_model()
    prefix = str(tmp_path / "cb")
    callback = mx.rnn.do_rnn_checkpoint(cell, prefix, period=2)
    for epoch in range(4):
        callback(epoch, sym, args, {})
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".params")) == ["cb-0002.params", "cb-0004.params"]


def test_checkpoint_callback_during_fit_round_trips_into_a_new_module(tmp_path):
    rng = np.random.RandomState(3)
    sentences = [list(rng.randint(1, 6, 5)) for _ in range(12)]
    it = mx.rnn.BucketSentenceIter(sentences, batch_size=4, buckets=[5], invalid_label=0, layout="TN")
    cell = mx.rnn.FusedRNNCell(8, mode="gru", prefix="gru_")

    def network():
        embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=6, output_dim=4, name="embed")
        out, _ = cell.unroll(5, embed, layout="TNC", merge_outputs=True)
        pred = mx.sym.FullyConnected(mx.sym.Reshape(out, shape=(-1, 8)), num_hidden=6, name="pred")
        return mx.sym.SoftmaxOutput(pred, mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,)),
                                    name="softmax")

    prefix = str(tmp_path / "lm")
    mod = mx.mod.Module(network(), context=mx.cpu())
    mod.fit(it, num_epoch=2, optimizer="adam", initializer=mx.init.Xavier(),
            epoch_end_callback=mx.rnn.do_rnn_checkpoint(cell, prefix))
    assert os.path.exists(prefix + "-0002.params") and os.path.exists(prefix + "-symbol.json")
    sym, arg_params, aux_params = mx.rnn.load_rnn_checkpoint(cell, prefix, 2)
    trained = mod.get_params()[0]
    assert sorted(arg_params) == sorted(trained)
    for k in trained:
        np.testing.assert_array_equal(arg_params[k].asnumpy(), trained[k].asnumpy())
    again = mx.mod.Module(sym, context=mx.cpu())
    again.bind(it.provide_data, it.provide_label, for_training=False)
    again.set_params(arg_params, aux_params)
    it.reset()
    batch = it.next()
    mod.forward(batch, is_train=False)
    again.forward(batch, is_train=False)
    np.testing.assert_allclose(again.get_outputs()[0].asnumpy(), mod.get_outputs()[0].asnumpy(), rtol=1e-6)
