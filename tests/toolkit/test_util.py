"""mx.util: NumPy shape semantics flag (thread-local and global), scopes and decorators, the
NumPy array semantics flag (thread-local), env access; behaviour as MXNet 1.9.1 (checked with its venv)."""
import struct
import threading

import pytest

import ember as mx
from ember import util
from ember.base import MXNetError
from ember.imperative import serialization


@pytest.fixture(autouse=True)
def _legacy_mode():
    util.reset_np()
    yield
    util.reset_np()


def _in_other_thread(fn):
    result = []
    t = threading.Thread(target=lambda: result.append(fn()))
    t.start()
    t.join()
    return result[0]


def test_flag_is_off_by_default_and_returns_previous_state():
    assert mx.is_np_shape() is False
    assert mx.set_np_shape(True) is False
    assert mx.is_np_shape() is True
    assert mx.set_np_shape(True) is True
    assert mx.set_np_shape(False) is True
    assert mx.is_np_shape() is False


def test_true_is_thread_local_and_2_is_global():
    mx.set_np_shape(True)
    assert _in_other_thread(util.is_np_shape) is False
    mx.set_np_shape(util.NP_SHAPE_GLOBAL_ON)
    assert _in_other_thread(util.is_np_shape) is True
    mx.set_np_shape(False)  # off clears the global flag too
    assert _in_other_thread(util.is_np_shape) is False
    assert mx.is_np_shape() is False


def test_invalid_flag_is_refused():
    with pytest.raises(MXNetError, match="invalid flag"):
        mx.set_np_shape(5)
    assert mx.is_np_shape() is False


def test_np_shape_scopes_nest_and_restore():
    with mx.np_shape(True):
        assert mx.is_np_shape()
        with mx.np_shape(False):
            assert not mx.is_np_shape()
        assert mx.is_np_shape()
    assert not mx.is_np_shape()
    with mx.np_shape(None):  # None leaves the state alone
        assert not mx.is_np_shape()
    with pytest.raises(KeyError):
        with mx.np_shape():
            raise KeyError("restored even on errors")
    assert not mx.is_np_shape()


def test_use_np_shape_on_functions_and_classes():
    @mx.use_np_shape
    def inside():
        return mx.is_np_shape()

    assert inside() is True and mx.is_np_shape() is False
    assert inside.__name__ == "inside"

    @mx.use_np_shape
    class Scoped:
        def method(self):
            return mx.is_np_shape()

        @property
        def prop(self):
            return mx.is_np_shape()

        @staticmethod
        def static():
            return mx.is_np_shape()

    obj = Scoped()
    assert (obj.method(), obj.prop, Scoped.static()) == (True, True, True)
    assert mx.is_np_shape() is False
    with pytest.raises(TypeError, match="use_np_shape can only decorate"):
        mx.use_np_shape(3)


def test_numpy_array_semantics_scopes_and_switches():
    assert mx.is_np_array() is False
    with mx.np_array(True):
        assert mx.is_np_array()
        with mx.np_array(False):
            assert mx.is_np_array() is False
        assert mx.is_np_array()
    assert mx.is_np_array() is False
    util.set_np()
    try:
        assert mx.is_np_array() and mx.is_np_shape()
        with pytest.raises(ValueError, match="npx.reset_np"):
            mx.set_np_shape(False)  # shape semantics cannot go while array semantics is on (MXNet)
    finally:
        util.reset_np()
    assert not mx.is_np_array() and not mx.is_np_shape()
    with pytest.raises(ValueError, match="NumPy Shape semantics is required"):
        util.set_np(shape=False, array=True)
    assert not mx.is_np_array()


def test_numpy_array_semantics_is_per_thread():
    util.set_np()
    try:
        assert mx.is_np_array() and _in_other_thread(mx.is_np_array) is False
    finally:
        util.reset_np()


def test_set_np_shape_only_and_reset():
    util.set_np(shape=True, array=False)
    assert mx.is_np_shape() and not mx.is_np_array()
    util.reset_np()
    assert not mx.is_np_shape()


def test_use_np_runs_functions_and_class_methods_under_both_flags():
    @mx.use_np
    def flags():
        return mx.is_np_array(), mx.is_np_shape()

    assert flags() == (True, True)

    @mx.use_np_array
    class Block:
        def forward(self):
            return mx.is_np_array()

    assert Block().forward() is True
    assert mx.is_np_shape() is False and mx.is_np_array() is False


def test_getenv_setenv():
    name = "EMBER_TEST_UTIL_VARIABLE"
    assert util.getenv(name) is None
    util.setenv(name, "42")
    assert util.getenv(name) == "42"
    util.setenv(name, None)
    assert util.getenv(name) is None


def _first_record_magic(path):
    with open(path, "rb") as f:
        raw = f.read()
    return struct.unpack_from("<I", raw, 24)[0]


def test_save_writes_v3_records_in_np_shape_mode(tmp_path):
    # MXNet 1.9.1: mx.nd.save writes 0xF993FAC9 records, and 0xF993FACA inside `with mx.np_shape()`
    legacy, numpy_mode = str(tmp_path / "legacy.params"), str(tmp_path / "np.params")
    mx.nd.save(legacy, [mx.nd.ones((2,))])
    with mx.np_shape():
        mx.nd.save(numpy_mode, [mx.nd.ones((2,))])
    assert _first_record_magic(legacy) == serialization.V2_MAGIC
    assert _first_record_magic(numpy_mode) == serialization.V3_MAGIC
    with mx.np_shape():
        back = mx.nd.load(numpy_mode)
    assert back[0].asnumpy().tolist() == [1.0, 1.0]
