"""Gluon under NumPy array semantics (`npx.set_np()` / `use_np`), as MXNet 1.9.1 behaves: parameters and
block outputs are mx.np.ndarrays, hybrid_forward's F.np / F.npx work on arrays and, traced, on np
symbols; ember's own layers run unchanged inside user blocks.  Numbers against numpy references."""
import numpy as np
import pytest

import ember as mx
from ember import autograd, gluon
from ember.gluon import nn
from ember.util import use_np


@use_np
class _NpMLP(gluon.HybridBlock):
    """A user block in numpy style around two of ember's layers."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.hidden = nn.Dense(8, activation="tanh")
            self.out = nn.Dense(3, flatten=False)
            self.scale = self.params.get("scale", shape=(3,), init=mx.init.Constant(2.0))

    def hybrid_forward(self, F, x, scale):
        h = self.hidden(x)
        h = F.np.expand_dims(h, axis=1)  # (N, 1, 8): numpy reshape semantics in user code
        y = self.out(h)[:, 0, :] * scale
        return F.npx.relu(y) + F.np.mean(y, axis=1, keepdims=True)


def _reference(net, x: np.ndarray) -> np.ndarray:
    p = {k.split("_", 1)[1]: v.data().asnumpy() for k, v in net.collect_params().items()}
    h = np.tanh(x @ p["dense0_weight"].T + p["dense0_bias"])
    y = (h @ p["dense1_weight"].T + p["dense1_bias"]) * p["scale"]
    return np.maximum(y, 0) + y.mean(axis=1, keepdims=True)


@use_np
def _net_and_input(seed: int, hybridize: bool, batch: int):
    mx.random.seed(seed)
    net = _NpMLP(prefix="mlp_")
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    return net, mx.np.array(np.random.RandomState(seed).randn(batch, 5).astype(np.float32))


@pytest.mark.parametrize("hybridize", [False, True])
def test_user_block_around_ember_layers_matches_numpy(hybridize):
    @use_np
    def run():
        net, x = _net_and_input(3, hybridize, 4)
        y = net(x)
        assert type(y) is mx.np.ndarray and y.shape == (4, 3)
        for p in net.collect_params().values():
            assert type(p.data()) is mx.np.ndarray and type(p.grad()) is mx.np.ndarray
        np.testing.assert_allclose(y.asnumpy(), _reference(net, x.asnumpy()), rtol=1e-5, atol=1e-6)
    run()


def test_hybridized_gradients_equal_imperative_and_finite_differences():
    @use_np
    def grads(hybridize):
        net, x = _net_and_input(5, hybridize, 2)
        x.attach_grad()
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        assert loss.shape == ()
        return net, x, {k: v.grad().asnumpy() for k, v in net.collect_params().items()}, x.grad.asnumpy()

    net, x, g_imp, gx_imp = grads(False)
    _, _, g_hyb, gx_hyb = grads(True)
    for k in g_imp:
        np.testing.assert_allclose(g_hyb[k], g_imp[k], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gx_hyb, gx_imp, rtol=1e-4, atol=1e-5)
    # d loss / d x by central differences on the numpy reference
    xv, eps = x.asnumpy().astype(np.float64), 1e-3
    num = np.zeros_like(xv)
    for i in np.ndindex(*xv.shape):
        up, down = xv.copy(), xv.copy()
        up[i] += eps
        down[i] -= eps
        num[i] = ((_reference(net, up) ** 2).sum() - (_reference(net, down) ** 2).sum()) / (2 * eps)
    np.testing.assert_allclose(gx_imp, num, rtol=2e-2, atol=2e-3)


def test_training_with_trainer_and_loss_in_numpy_mode():
    @use_np
    def run():
        mx.random.seed(0)
        rs = np.random.RandomState(0)
        x = mx.np.array(rs.randn(64, 5).astype(np.float32))
        label = mx.np.array((rs.rand(64) * 3).astype(np.int64))
        net = _NpMLP()
        net.initialize(mx.init.Xavier())
        net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        losses = []
        for _ in range(30):
            with autograd.record():
                loss = loss_fn(net(x), label)
            assert type(loss) is mx.np.ndarray and loss.shape == (64,)
            loss.backward()
            trainer.step(64)
            losses.append(float(loss.mean()))
        assert losses[-1] < 0.7 * losses[0]
    run()


def test_legacy_blocks_keep_legacy_arrays():
    net = nn.Dense(2, in_units=3)
    net.initialize()
    y = net(mx.nd.ones((1, 3)))
    assert type(y) is mx.nd.NDArray and type(net.weight.data()) is mx.nd.NDArray


def test_ember_layers_see_legacy_arrays_and_user_code_numpy_ones():
    seen = {}

    class Probe(nn.Dense):  # ember's hybrid_forward (mx.nd semantics), observed through a hook
        pass

    @use_np
    def run():
        probe = Probe(2, in_units=3)
        probe.initialize()
        probe.register_forward_pre_hook(lambda block, args: seen.setdefault("layer", type(args[0])))
        y = probe(mx.np.ones((1, 3)))
        seen["caller"] = type(y)
    run()
    assert seen == {"layer": mx.nd.NDArray, "caller": mx.np.ndarray}


def test_deferred_shape_learned_through_numpy_dot_when_hybridized():
    @use_np
    class Linear(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.w = self.params.get("w", shape=(0, 4), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return x.dot(w)

    @use_np
    def run():
        net = Linear()
        net.initialize(mx.init.One())
        net.hybridize()
        y = net(mx.np.ones((2, 6)))
        assert net.w.shape == (6, 4)
        np.testing.assert_allclose(y.asnumpy(), np.full((2, 4), 6.0))
    run()


def test_parameter_shape_uses_minus_one_for_unknown_under_numpy_shape():
    p = gluon.Parameter("w", shape=(0, 3), allow_deferred_init=True)
    assert p.shape == (0, 3)
    with mx.np_shape(True):
        assert p.shape == (-1, 3)
        assert not gluon.utils.shape_is_known(p.shape)
        p.shape = (5, -1)
        assert p.shape == (5, 3)
    assert gluon.utils.shape_is_known((5, 3)) and not gluon.utils.shape_is_known((5, 0))


def test_export_of_a_numpy_block_imports_with_the_same_outputs(tmp_path):
    @use_np
    def run():
        mx.random.seed(1)
        net = _NpMLP()
        net.initialize(mx.init.Xavier())
        net.hybridize()
        x = mx.np.array(np.random.RandomState(2).randn(3, 5).astype(np.float32))
        y = net(x).asnumpy()
        sym_file, params_file = net.export(str(tmp_path / "npmlp"))
        back = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
        np.testing.assert_allclose(back(x).asnumpy(), y, rtol=1e-5, atol=1e-6)
    run()


def test_split_data_and_split_and_load_keep_numpy_arrays():
    @use_np
    def run():
        x = mx.np.array(np.arange(24, dtype=np.float32).reshape(4, 6))
        for axis in (0, 1):
            parts = gluon.utils.split_data(x, 2, batch_axis=axis)
            assert all(type(p) is mx.np.ndarray for p in parts)
            np.testing.assert_array_equal(mx.np.concatenate(parts, axis=axis).asnumpy(), x.asnumpy())
        loaded = gluon.utils.split_and_load(np.ones((4, 2)), [mx.cpu(0), mx.cpu(1)])
        assert all(type(p) is mx.np.ndarray for p in loaded)
    run()


@pytest.mark.parametrize("num_workers", [0, 1])
def test_dataloader_batches_are_numpy_arrays(num_workers):
    data = np.arange(20, dtype=np.float32).reshape(10, 2)
    dataset = gluon.data.ArrayDataset(data, np.arange(10))

    @use_np
    def run():
        loader = gluon.data.DataLoader(dataset, batch_size=4, num_workers=num_workers)
        batches = list(loader)
        assert all(type(d) is mx.np.ndarray and type(lab) is mx.np.ndarray for d, lab in batches)
        np.testing.assert_array_equal(np.concatenate([d.asnumpy() for d, _ in batches]), data)
    run()


def test_updater_converts_numpy_arrays_only_for_an_optimizer_made_under_numpy_semantics():
    weight, grad = mx.np.ones((2, 2)), mx.np.full((2, 2), 0.5)
    with pytest.raises(ValueError, match="np.ndarray to mx.nd.NDArray is not allowed"):
        mx.optimizer.Updater(mx.optimizer.SGD(learning_rate=1.0))(0, grad, weight)

    @use_np
    def run():
        updater = mx.optimizer.Updater(mx.optimizer.SGD(learning_rate=1.0))
        updater(0, grad, weight)
    run()
    np.testing.assert_allclose(weight.asnumpy(), np.full((2, 2), 0.5))


def test_numpy_parameters_refuse_sparse_storage():
    @use_np
    def run():
        p = gluon.Parameter("emb", shape=(4, 2), stype="row_sparse")
        p.initialize()
    with pytest.raises(ValueError, match="does not support stype = row_sparse"):
        run()


class _LegacyOutputs(gluon.HybridBlock):
    """Written without use_np: traced, its inputs are legacy symbols and as_nd_ndarray is a no-op."""

    def hybrid_forward(self, F, x):
        return x.as_nd_ndarray() + x.as_nd_ndarray(), x.as_nd_ndarray() * x.as_nd_ndarray()


@use_np
class _MixedOutputs(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return x.as_nd_ndarray() + x.as_nd_ndarray(), F.np.multiply(x, x)


@pytest.mark.parametrize("hybridize", [False, True])
def test_outputs_of_one_kind_and_mixed_kinds_refused(hybridize):
    data = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], dtype=np.float32)
    net = _LegacyOutputs()
    if hybridize:
        net.hybridize()
    twice, square = net(mx.nd.array(data))
    assert type(twice) is mx.nd.NDArray and type(square) is mx.nd.NDArray
    np.testing.assert_allclose(twice.asnumpy(), data + data)
    np.testing.assert_allclose(square.asnumpy(), data * data)
    mixed = _MixedOutputs()
    if hybridize:
        mixed.hybridize()
    with pytest.raises(TypeError, match="both legacy"):
        use_np(lambda: mixed(mx.np.array(data)))()


@use_np
@pytest.mark.parametrize("shape", [(0,), (2, 0, 2), (), (3, 2)])
@pytest.mark.parametrize("dtype", [None, "int8", "float64"])
def test_zeros_and_ones_in_a_hybridized_block_take_numpy_shapes(shape, dtype):
    class Fill(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x + F.np.zeros(shape, dtype), x * F.np.ones(shape, dtype)

    data = np.random.uniform(size=shape).astype(dtype or np.float32)
    for hybridize in (False, True):
        net = Fill()
        if hybridize:
            net.hybridize()
        plus, times = net(mx.np.array(data, dtype=data.dtype))
        assert type(plus) is mx.np.ndarray and plus.shape == shape and plus.dtype == data.dtype
        np.testing.assert_array_equal(plus.asnumpy(), data + np.zeros(shape, dtype))
        np.testing.assert_array_equal(times.asnumpy(), data * np.ones(shape, dtype))
