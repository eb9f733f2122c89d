"""BucketingModule (shared parameters and memory across buckets) and SequentialModule."""
import numpy as np
import pytest

import ember as mx

HIDDEN = 4


def _sym_gen(steps):
    """A weight-shared chain of `steps` FullyConnected layers (an unrolled RNN in miniature)."""
    data = mx.sym.Variable("data")
    w, b = mx.sym.Variable("fc_weight"), mx.sym.Variable("fc_bias")
    x = data
    for i in range(steps):
        x = mx.sym.Activation(mx.sym.FullyConnected(x, weight=w, bias=b, num_hidden=HIDDEN, name=f"fc{i}"),
                              act_type="tanh")
    out = mx.sym.FullyConnected(x, num_hidden=3, name="out")
    return mx.sym.SoftmaxOutput(out, name="softmax"), ("data",), ("softmax_label",)


def _batch(rs, key):
    x = rs.randn(6, HIDDEN).astype(np.float32)
    y = rs.randint(0, 3, 6).astype(np.float32)
    return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)], bucket_key=key,
                           provide_data=[mx.io.DataDesc("data", (6, HIDDEN))],
                           provide_label=[mx.io.DataDesc("softmax_label", (6,))])


def _reference_outputs(params, key, batch):
    """The same symbol bound alone with the same parameters."""
    sym, _, _ = _sym_gen(key)
    mod = mx.mod.Module(sym)
    mod.bind([("data", (6, HIDDEN))], [("softmax_label", (6,))], for_training=False)
    mod.set_params(*params)
    mod.forward(batch, is_train=False)
    return mod.get_outputs()[0].asnumpy()


@pytest.mark.parametrize("contexts", [[mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]])
def test_buckets_share_parameters_and_storage(contexts):
    rs = np.random.RandomState(0)
    mod = mx.mod.BucketingModule(_sym_gen, default_bucket_key=5, context=contexts)
    mod.bind([("data", (6, HIDDEN))], [("softmax_label", (6,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.3})
    for key in (5, 2, 3, 5, 2, 1):
        batch = _batch(rs, key)
        mod.forward_backward(batch)
        got = mod.get_outputs()[0].asnumpy()
        params = mod.get_params()
        mod.update()
        np.testing.assert_allclose(got, _reference_outputs(params, key, batch), rtol=1e-5, atol=1e-6)
    assert sorted(mod._buckets) == [1, 2, 3, 5]
    default = mod._buckets[5]._exec_group.execs[0]
    for key in (1, 2, 3):
        exe = mod._buckets[key]._exec_group.execs[0]
        assert exe.arg_dict["fc_weight"] is default.arg_dict["fc_weight"]
        assert exe.grad_dict["fc_weight"] is default.grad_dict["fc_weight"]
        assert exe._storage.pool is default._storage.pool  # intermediates reuse the default bucket's bytes
        assert mod._buckets[key]._optimizer is mod._buckets[5]._optimizer
    # the smaller buckets fit in the default bucket's memory: the pool did not grow
    assert len(default._storage.pool.blocks) == len(default._storage.blocks)


def test_switch_bucket_names_and_memory():
    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        embed = mx.sym.Embedding(data=data, input_dim=20, output_dim=HIDDEN)  # auto-named
        pred = mx.sym.FullyConnected(mx.sym.Reshape(embed, shape=(-1, HIDDEN)), num_hidden=20, name="pred")
        label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name="softmax"), ("data",), ("softmax_label",)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=10)
    mod.bind([("data", (4, 10))], [("softmax_label", (4, 10))])
    mod.init_params()
    assert mod.symbol.list_arguments()[1] == "embedding0_weight"  # every call of sym_gen names alike
    mod.switch_bucket(5, [("data", (4, 5))], [("softmax_label", (4, 5))])
    assert mod.symbol.list_arguments()[1] == "embedding0_weight"
    before = mod._buckets[10]._total_exec_bytes
    del mod._buckets[5]
    mod.switch_bucket(5, [("data", (4, 5))], [("softmax_label", (4, 5))])
    assert mod._buckets[10]._total_exec_bytes == before > 0


@pytest.mark.parametrize("grad_req,second", [("write", 2.0), ("add", 4.0)])
def test_grad_req_across_buckets(grad_req, second):
    def sym_gen(_):
        data = mx.sym.Variable("data")
        weight = mx.sym.Variable("a", shape=(1,), init=mx.init.One())
        return mx.sym.make_loss(mx.sym.broadcast_mul(data, weight)), ("data",), None
    mod = mx.mod.BucketingModule(sym_gen=sym_gen, default_bucket_key=10)
    mod.bind(data_shapes=[["data", (2,)]], for_training=True, grad_req=grad_req)
    mod.init_params()
    for key, want in ((10, 2.0), (5, second)):
        mod.forward_backward(mx.io.DataBatch([mx.nd.ones((2,))], None, bucket_key=key,
                                             provide_data=[mx.io.DataDesc("data", (2,), layout="N")]))
        assert mod._curr_module._exec_group.execs[0].grad_dict["a"].asscalar() == want
    assert mod._curr_module._grad_req == grad_req


def test_bucketing_checkpoint_round_trip(tmp_path):
    rs = np.random.RandomState(1)
    mod = mx.mod.BucketingModule(_sym_gen, default_bucket_key=3)
    mod.bind([("data", (6, HIDDEN))], [("softmax_label", (6,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.3})
    for key in (3, 1):
        mod.forward_backward(_batch(rs, key))
        mod.update()
    prefix = str(tmp_path / "bucket")
    mod.save_checkpoint(prefix, 1)
    mod2 = mx.mod.BucketingModule.load(prefix, 1, sym_gen=_sym_gen, default_bucket_key=3)
    mod2.bind([("data", (6, HIDDEN))], [("softmax_label", (6,))])
    a, b = mod.get_params()[0], mod2.get_params()[0]
    assert set(a) == set(b)
    for k in a:
        np.testing.assert_array_equal(a[k].asnumpy(), b[k].asnumpy())
    with pytest.raises(mx.mod.ModuleError, match="default_bucket_key"):
        mx.mod.BucketingModule(_sym_gen)


def test_sequential_module_matches_one_module():
    """fc1 -> (tanh, fc2, softmax) as two chained modules trains exactly like the whole net in one."""
    rs = np.random.RandomState(2)
    params = {"fc1_weight": mx.nd.array(rs.randn(5, 4) * 0.5), "fc1_bias": mx.nd.array(rs.randn(5) * 0.1),
              "fc2_weight": mx.nd.array(rs.randn(3, 5) * 0.5), "fc2_bias": mx.nd.array(rs.randn(3) * 0.1)}
    net1 = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=5, name="fc1")
    tail = mx.sym.Activation(mx.sym.var("hidden"), act_type="tanh")
    net2 = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(tail, num_hidden=3, name="fc2"), name="softmax")
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(net1, label_names=None)).add(
        mx.mod.Module(net2, data_names=["hidden"]), take_labels=True, auto_wiring=True)
    whole = mx.mod.Module(mx.sym.SoftmaxOutput(mx.sym.FullyConnected(
        mx.sym.Activation(net1, act_type="tanh"), num_hidden=3, name="fc2"), name="softmax"))
    for m in (seq, whole):
        m.bind([("data", (8, 4))], [("softmax_label", (8,))])
        m.init_params(arg_params=params, allow_missing=False) if m is whole else m.init_params(arg_params=params)
        m.init_optimizer(optimizer_params={"learning_rate": 0.5})
    metric_seq, metric_whole = mx.metric.Accuracy(), mx.metric.Accuracy()
    for _ in range(3):
        x = rs.randn(8, 4).astype(np.float32)
        y = rs.randint(0, 3, 8).astype(np.float32)
        batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
        for m, metric in ((seq, metric_seq), (whole, metric_whole)):
            m.forward_backward(batch)
            m.update_metric(metric, batch.label)
            m.update()
        np.testing.assert_allclose(seq.get_outputs()[0].asnumpy(), whole.get_outputs()[0].asnumpy(), rtol=1e-5)
    ps, pw = seq.get_params()[0], whole.get_params()[0]
    assert set(ps) == set(pw)
    for k in ps:
        np.testing.assert_allclose(ps[k].asnumpy(), pw[k].asnumpy(), rtol=1e-5, atol=1e-6)
    assert metric_seq.get() == metric_whole.get()
    assert seq.output_shapes == [("softmax_output", (8, 3))]
    with pytest.raises(ValueError, match="unknown meta"):
        seq.add(mx.mod.Module(net1, label_names=None), take_label=True)


def test_sequential_module_rejects_duplicate_parameters():
    a = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    b = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=4, name="fc")
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(a, label_names=None)).add(mx.mod.Module(b, data_names=["x"], label_names=None),
                                                    auto_wiring=True)
    seq.bind([("data", (2, 4))], for_training=False)
    with pytest.raises(mx.mod.ModuleError, match="'fc_weight'.*unique"):
        seq.init_params()
