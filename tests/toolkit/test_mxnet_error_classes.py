"""Errors raised as MXNet 1.9.1 raises them: MXNetError is a RuntimeError, and each of ember's error
classes is also the builtin class that fits, so code catching either works (classes and messages
checked against MXNet 1.9.1 by hand with the anchor venv)."""
import numpy as np
import pytest

import ember as mx
from ember import base


def test_mxnet_error_is_a_runtime_error_and_classes_keep_both_bases():
    assert issubclass(mx.base.MXNetError, RuntimeError)
    assert mx.MXNetError is mx.base.MXNetError
    for cls, builtin in ((base.ShapeError, ValueError), (base.DTypeError, TypeError),
                         (base.ContextError, ValueError), (base.FormatError, ValueError),
                         (base.MissingFileError, FileNotFoundError), (base.ArgumentError, TypeError),
                         (base.ArgumentError, ValueError), (base.NotImplementedForSymbol, NotImplementedError)):
        assert issubclass(cls, base.MXNetError) and issubclass(cls, builtin), cls
    with pytest.raises(RuntimeError):  # an op error caught as MXNet users do
        mx.nd.ones((2, 3)) + mx.nd.ones((4, 5))


def test_load_of_missing_file_is_mxnet_error_and_file_not_found(tmp_path):
    path = str(tmp_path / "nope.params")
    for load in (mx.nd.load, mx.sym.load):
        with pytest.raises(mx.base.MXNetError) as info:
            load(path)
        assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, OSError)
        assert info.value.filename == path and "nope.params" in str(info.value)


def test_save_of_non_ndarray_values_is_type_error(tmp_path):
    path = str(tmp_path / "x.params")
    with pytest.raises(TypeError, match=r"data\['a'\] must be an NDArray, not ndarray"):
        mx.nd.save(path, {"a": np.ones(3)})
    with pytest.raises(TypeError, match=r"data\[1\] must be an NDArray, not int"):
        mx.nd.save(path, [mx.nd.ones(2), 2])
    mx.nd.save(path, {"a": mx.nd.ones(3)})
    np.testing.assert_array_equal(mx.nd.load(path)["a"].asnumpy(), np.ones(3))


def _mlp():
    x = mx.sym.var("x")
    return mx.sym.FullyConnected(x, num_hidden=3, name="fc")


def test_unknown_keyword_to_infer_shape_and_type_names_it():
    y = _mlp()
    for call, val in ((y.infer_shape, (2, 4)), (y.infer_type, np.float32)):
        with pytest.raises(mx.base.MXNetError, match="'foo' is not an input") as info:
            call(x=val, foo=val)
        assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match="either by position or by name"):
        y.infer_shape((2, 4), fc_bias=(3,))


def test_unknown_keyword_to_forward_is_type_error_naming_it():
    ex = _mlp().simple_bind(mx.cpu(), x=(2, 4))
    with pytest.raises(TypeError, match="'foo' is not an argument") as info:
        ex.forward(foo=mx.nd.ones((2, 4)))
    assert isinstance(info.value, mx.base.MXNetError)


def test_long_name_lists_are_capped():
    names = [f"layer{i}_weight" for i in range(40)]
    text = base.brief_names(names)
    assert "layer9_weight" in text and "layer10_weight" not in text and "30 more" in text
    x = mx.sym.var("data")
    for i in range(30):
        x = mx.sym.FullyConnected(x, num_hidden=2, name=f"fc{i}")
    with pytest.raises(ValueError) as info:
        x.infer_shape(data=(1, 2), dta=(1, 2))
    msg = str(info.value)
    assert "'dta'" in msg and "more" in msg and "fc29_bias" not in msg and len(msg) < 400
    ex = x.simple_bind(mx.cpu(), data=(1, 2))
    with pytest.raises(TypeError) as info:
        ex.forward(dta=mx.nd.ones((1, 2)))
    assert "'dta'" in str(info.value) and len(str(info.value)) < 400


def test_kvstore_refuses_mixed_int_and_str_keys():
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones((2,)))
    with pytest.raises(mx.base.MXNetError, match="Mixed key types"):
        kv.init("a", mx.nd.ones((2,)))
    kv = mx.kv.create("local")
    kv.init("a", mx.nd.ones((2,)))
    with pytest.raises(TypeError, match="Mixed key types"):
        kv.init(3, mx.nd.ones((2,)))
    with pytest.raises(mx.base.MXNetError, match="Mixed key types"):
        mx.kv.create("local").init([3, "b"], [mx.nd.ones((2,))] * 2)


def test_backward_without_head_gradient_on_non_loss_output_raises():
    y = _mlp()
    ex = y.simple_bind(mx.cpu(), x=(2, 4))
    ex.forward(is_train=True)
    with pytest.raises(mx.base.MXNetError, match=r"\['fc_output'\] is not a loss.*head gradient"):
        ex.backward()
    ex.backward(mx.nd.ones((2, 3)))  # with the head gradient it runs
    np.testing.assert_allclose(ex.grad_dict["fc_bias"].asnumpy(), [2, 2, 2])
    # a loss output needs none
    loss = mx.sym.MakeLoss(mx.sym.sum(_mlp()))
    ex = loss.simple_bind(mx.cpu(), x=(2, 4))
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_allclose(ex.grad_dict["fc_bias"].asnumpy(), [2, 2, 2])
    # in a group, only the output that is not a loss needs one; BlockGrad outputs need none
    grp = mx.sym.Group([mx.sym.MakeLoss(mx.sym.sum(_mlp())), mx.sym.BlockGrad(mx.sym.var("z") * 2)])
    ex = grp.simple_bind(mx.cpu(), x=(2, 4), z=(3,))
    ex.forward(is_train=True)
    ex.backward()


def test_bool_of_symbol_is_not_implemented_for_symbol():
    with pytest.raises(mx.base.NotImplementedForSymbol, match='Function __bool__ \\(namely operator "bool"\\)'):
        bool(mx.sym.var("x"))
    with pytest.raises(NotImplementedError):
        if mx.sym.var("x") == 1:
            pass
