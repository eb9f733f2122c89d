"""engine.core.ops_in_caller(): pushes run in the pushing thread when ready, so an op may wait on them."""
import threading

from ember import engine
from ember.engine import core


def test_pushes_inside_run_in_the_caller_and_can_be_waited_on_inside_an_op():
    seen = {}
    outer_var = engine.Var("outer")

    def outer():
        seen["outer"] = threading.get_ident()
        inner_var = engine.Var("inner")

        def inner():
            seen["inner"] = threading.get_ident()
        with core.ops_in_caller():
            engine.push(inner, write=[inner_var], name="inner")  # not inline: would go to a worker
            engine.wait(inner_var)  # fine inside an op: the inner op already ran here
        seen["done"] = True

    engine.push(outer, write=[outer_var], name="outer")
    engine.wait(outer_var)
    assert seen["done"] and seen["inner"] == seen["outer"]


def test_a_push_that_must_wait_is_queued_as_usual():
    gate = threading.Event()
    blocker = engine.Var("blocked")
    order = []
    engine.push(lambda: (gate.wait(5), order.append("first")), write=[blocker], name="slow")
    with core.ops_in_caller():
        engine.push(lambda: order.append("second"), write=[blocker], name="after")  # not ready: queued
    gate.set()
    engine.wait(blocker)
    assert order == ["first", "second"]


def test_flag_is_restored_and_per_thread():
    assert not getattr(core._tls, "in_caller", False)
    with core.ops_in_caller():
        assert core._tls.in_caller
        other = {}
        t = threading.Thread(target=lambda: other.update(flag=getattr(core._tls, "in_caller", False)))
        t.start()
        t.join()
        assert other["flag"] is False
        with core.ops_in_caller():
            pass
        assert core._tls.in_caller
    assert not core._tls.in_caller
