"""Per-thread scopes read and assigned on the class, as MXNet 1.x code does: `NameManager.current`,
`AttrScope.current` (mx.attribute), `Context.default_ctx`."""
import threading
import warnings

import pytest

import ember as mx
from ember.context import Context
from ember.test_utils import set_default_context

AttrScope, NameManager = mx.attribute.AttrScope, mx.name.NameManager


def _in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_name_manager_current_is_per_thread_and_assignable():
    mine = NameManager()
    NameManager.current = mine
    try:
        assert NameManager.current is mine and NameManager.current.get(None, "main") == "main0"
        theirs = _in_thread(lambda: NameManager.current)
        assert theirs is not mine and "main" not in theirs._counter
        assert mx.sym.FullyConnected(mx.sym.var("d"), num_hidden=2).name == "fullyconnected0"
    finally:
        NameManager.current = NameManager()
    with mx.name.Prefix("p_"):
        assert NameManager.current.get(None, "x") == "p_x0"


def test_attr_scope_current_is_per_thread_and_assignable():
    AttrScope.current = AttrScope(y="hi")
    try:
        assert AttrScope.current._attr == {"y": "hi"}
        assert _in_thread(lambda: AttrScope.current._attr) == {}
        with mx.AttrScope(x="1"):
            assert mx.sym.Variable("a").list_attr() == {"y": "hi", "x": "1"}
        assert mx.sym.Variable("b").list_attr() == {"y": "hi"}
    finally:
        AttrScope.current = AttrScope()
    assert mx.sym.Variable("c").list_attr() == {}


def test_context_default_ctx_reads_and_sets_this_threads_default():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert Context.default_ctx == mx.cpu(0)
        assert _in_thread(lambda: (set_default_context(mx.gpu(3)), Context.default_ctx)[1]) == mx.gpu(3)
        assert Context.default_ctx == mx.cpu(0)
        Context.default_ctx = mx.cpu(1)
        try:
            assert mx.current_context() == mx.cpu(1) and mx.nd.zeros((1,)).context == mx.cpu(1)
        finally:
            Context.default_ctx = mx.cpu(0)
        with pytest.raises(TypeError, match="Context"):
            Context.default_ctx = "cpu"
    with pytest.warns(DeprecationWarning):
        Context.default_ctx


def test_a_block_scope_keeps_a_foreign_block_alive_and_prefixes_names():
    # MXNet's test_blockscope enters the scope of a block nothing else refers to
    from ember.gluon import block

    class Stub:
        prefix, _empty_prefix = "spawned_", False

    with block._BlockScope(Stub()):
        assert NameManager.current.get(None, "hello") == "spawned_hello0"
    assert Context.devtype2str[mx.cpu().device_typeid] == "cpu" and Context.devstr2type["gpu"] == 2
