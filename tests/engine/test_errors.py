"""Errors raised inside ops: recorded on writes, inherited by readers, re-raised at waits, cleared by a good write.

As in MXNet, an error is raised once: a later wait or wait_all does not raise it again
(tests/engine/test_error_clearing.py has the details)."""
import threading

import pytest

import ember.engine as engine
from ember.base import EngineError


class CustomError(Exception):
    pass


def fail(exc):
    def fn():
        raise exc
    return fn


def test_error_surfaces_at_wait_with_type_message_and_op_name():
    v = engine.Var()
    engine.push(fail(CustomError("bad value 42")), write=[v], name="my_failing_op")
    with pytest.raises(CustomError, match="bad value 42") as info:
        v.wait()
    assert any("my_failing_op" in note for note in info.value.__notes__)
    engine.wait_all()  # raised once, by the wait


def test_chain_of_inherited_errors_skips_dependants():
    a, b, c = engine.Var(), engine.Var(), engine.Var()
    ran = []
    engine.push(fail(KeyError("root")), write=[a], name="root")
    engine.push(lambda: ran.append("b"), read=[a], write=[b], name="child")
    engine.push(lambda: ran.append("c"), read=[b], write=[c], name="grandchild")
    with pytest.raises(KeyError, match="root"):
        c.wait()
    assert ran == []
    assert engine.stats()["skipped"] >= 2
    engine.wait_all()  # the chain shares the root's error, raised once


def test_recovery_after_successful_write():
    a, b = engine.Var(), engine.Var()
    engine.push(fail(ValueError("x")), write=[a])
    with pytest.raises(ValueError):
        a.wait()
    engine.push(lambda: None, write=[a])  # overwrite successfully
    a.wait()
    assert a.error is None
    out = []
    engine.push(lambda: out.append(1), read=[a], write=[b])
    b.wait()
    assert out == [1]
    engine.wait_all()


def test_thousand_failures_in_a_row_then_engine_still_runs():
    held_before = engine.stats()["errors_held"]
    v, w = engine.Var(), engine.Var()
    for i in range(1000):
        engine.push(fail(RuntimeError(f"failure {i}")), write=[v], name="fails")
        engine.push(lambda: None, read=[v], write=[w])
    engine.wait_all_quiet()  # finishes them, raising nothing
    assert isinstance(w.error, RuntimeError) and "failure 999" in str(w.error)
    with pytest.raises(RuntimeError, match="failure 0"):
        engine.wait_all()
    w.wait()  # wait_all raised the first and cleared them all
    total = []
    u = engine.Var()
    for i in range(1000):
        engine.push(lambda i=i: total.append(i), write=[u])
    u.wait()
    assert total == list(range(1000))
    engine.push(lambda: None, write=[v])
    v.wait()
    # the engine forgets exceptions no variable or pending wait_all refers to any more
    assert engine.stats()["errors_held"] <= held_before + 1  # only w's error is still referenced


def test_async_op_error_and_success_from_another_thread():
    v = engine.Var()

    def start(done):
        threading.Timer(0.01, lambda: done(OSError("link down"))).start()

    engine.push(start, write=[v], prop="async", name="send")
    with pytest.raises(OSError, match="link down"):
        v.wait()
    engine.wait_all()
    got = []

    def start_ok(done):
        threading.Timer(0.01, lambda: (got.append(1), done())).start()

    engine.push(start_ok, write=[v], prop="async")
    v.wait()
    assert got == [1]


def test_async_done_twice_is_an_error():
    v = engine.Var()
    box = []
    engine.push(lambda done: (box.append(done), done()), write=[v], prop="async")
    v.wait()
    with pytest.raises(EngineError, match="twice"):
        box[0]()


# (under NaiveEngine the root's error raises at its push and is cleared, so its readers run as
# usual: tests/engine/test_error_clearing.py)
@pytest.mark.parametrize("engine_type", ["ThreadedEngine"])
def test_on_error_async_op_runs_after_a_failed_input_and_keeps_its_error(engine_type):
    previous = engine.engine_type()
    engine.set_engine_type(engine_type)
    try:
        a, b, c, d = engine.Var(), engine.Var(), engine.Var(), engine.Var()
        seen = []

        def release(done):  # e.g. frees an ordered slot that later ops wait for
            seen.append(done.input_failed)
            done()
        engine.push(fail(CustomError("gradient failed")), write=[a], name="root")
        engine.push(release, read=[a], write=[b], prop="async", on_error=True, name="release")
        engine.push(lambda done: seen.append("plain ran"), read=[a], write=[c], prop="async")
        engine.push(release, read=[c], write=[d], prop="async", on_error=True, name="release_inherited")
        engine.wait_all_quiet()
        assert isinstance(b.error, CustomError)  # done() with no error still leaves the input's error
        assert isinstance(d.error, CustomError)  # the plain async op was skipped; c passed it to d
        with pytest.raises(CustomError, match="gradient failed"):
            b.wait()
        d.wait()  # the same error: raised once
        assert seen == [True, True]
        engine.wait_all()
        engine.push(release, write=[a], prop="async", on_error=True)
        a.wait()
        assert seen[-1] is False
    finally:
        engine.set_engine_type(previous)


def test_error_in_bulk_fails_the_group_only():
    v, w = engine.Var(), engine.Var()
    with engine.bulk(4):
        engine.push(fail(ZeroDivisionError("in bulk")), write=[v])
        engine.push(lambda: None, write=[v])
    with pytest.raises(ZeroDivisionError):
        v.wait()
    engine.wait_all()
    engine.push(lambda: None, write=[w])
    w.wait()


def test_bad_arguments_are_clear_errors():
    v = engine.Var()
    with pytest.raises(TypeError, match="engine.Var"):
        engine.push(lambda: None, write=[object()])
    with pytest.raises(ValueError, match="prop"):
        engine.push(lambda: None, write=[v], prop="weird")
    with pytest.raises(ValueError, match="on_error=True needs prop='async'"):
        engine.push(lambda: None, write=[v], on_error=True)
    with pytest.raises(ValueError, match="policy"):
        engine.set_policy("random_walk")
    with pytest.raises(ValueError, match="engine type"):
        engine.set_engine_type("TurboEngine")
    v.delete()
    with pytest.raises(EngineError, match="deleted"):
        engine.push(lambda: None, write=[v])
    with pytest.raises(EngineError, match="deleted"):
        v.wait()
