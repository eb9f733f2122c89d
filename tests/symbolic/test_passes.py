"""Single passes on hand-made graph states: dead-node elimination, inference sweeps, planner shortcuts."""
import numpy as np
import pytest

import ember as mx
from ember.base import ShapeError
from ember.symbolic import passes, planner
from ember.symbolic.passes import GraphState


def _state(sym, grad_req=None, **shapes):
    return GraphState(heads=list(sym._outputs), grad_req=grad_req or {}, known_shapes=shapes, known_dtypes={})


def test_dead_node_elimination_drops_unreachable_nodes_and_keeps_order():
    x = mx.sym.var("x")
    a = mx.sym.exp(x, name="a")
    dead = mx.sym.tanh(mx.sym.sin(x, name="d1"), name="d2")
    out = mx.sym.relu(a, name="out")
    g = passes.order_forward(_state(out, x=(2, 3)))
    d_nodes = [dead._outputs[0][0].inputs[0][0], dead._outputs[0][0]]
    g.nodes = g.nodes[:2] + d_nodes + g.nodes[2:]
    g.num_forward += 2
    g = passes.dead_node_elimination(g)
    assert [n.name for n in g.nodes] == ["x", "a", "out"]
    assert g.num_forward == 3 and g.stats["dead_nodes_removed"] == 2


def test_dead_node_elimination_keeps_backward_and_head_gradient_vars():
    x, w = mx.sym.var("x"), mx.sym.var("w")
    y = mx.sym.FullyConnected(x, weight=w, num_hidden=4, no_bias=True, name="fc")
    g = _state(mx.sym.sum(y), grad_req={"w": "write"}, x=(3, 5))
    g = passes.gradient(passes.order_forward(g))
    before = [n.name for n in g.nodes]
    g = passes.dead_node_elimination(g)
    assert [n.name for n in g.nodes] == before and g.stats["dead_nodes_removed"] == 0
    assert all(v in g.nodes for v in g.head_grad_vars)


def test_inference_fills_weights_backwards_and_reports_conflicts():
    x = mx.sym.var("x")
    h = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    g = passes.infer_type(passes.infer_shape(passes.order_forward(_state(h * 2, x=(3, 5)))))
    by_name = {n.name: n for n in g.nodes}
    assert g.shapes[(id(by_name["fc_weight"]), 0)] == (4, 5)
    assert g.shapes[(id(g.nodes[-1]), 0)] == (3, 4)
    assert g.dtypes[(id(by_name["fc_bias"]), 0)] == np.float32
    bad = _state(h + mx.sym.var("y"), x=(3, 5), y=(3, 7))
    with pytest.raises(ShapeError, match=r"\(3, 4\).*\(3, 7\)|\(3, 7\).*\(3, 4\)"):
        passes.infer_shape(passes.order_forward(bad))


def test_inference_needs_a_second_sweep_when_shapes_flow_backwards():
    """w's shape is only known from the later FullyConnected: exp(w), visited first, needs a second sweep."""
    x, w = mx.sym.var("x"), mx.sym.var("w")
    first = mx.sym.exp(w, name="first")      # nothing known about w when visited
    fc = mx.sym.FullyConnected(x, weight=w, num_hidden=4, no_bias=True, name="fc")
    out = mx.sym.Group([first, fc])
    g = passes.infer_shape(passes.order_forward(_state(out, x=(3, 6))))
    by_name = {n.name: n for n in g.nodes}
    assert [n.name for n in g.nodes].index("first") < [n.name for n in g.nodes].index("fc")
    assert g.shapes[(id(by_name["w"]), 0)] == (4, 6)
    assert g.shapes[(id(by_name["first"]), 0)] == (4, 6)


def test_best_plan_stops_at_a_candidate_on_the_bound():
    # size matching reaches the bound here, so the offset-packing candidates are not computed
    sizes, starts, ends = [128, 128, 128], [0, 1, 2], [1, 2, 3]
    p = planner.plan(sizes, starts, ends)
    assert p.total == planner.lower_bound(sizes, starts, ends) == 256
    assert list(p.candidates) == ["size_matching"]
    # where it does not, the others are tried and the smallest kept
    sizes, starts, ends = [128, 192, 128, 320], [0, 1, 2, 3], [1, 2, 3, 4]
    p = planner.plan(sizes, starts, ends)
    assert p.total == 448 and min(p.candidates.values()) == 448


def test_shape_only_reads_do_not_keep_bytes_alive():
    """t is read by broadcast_add, then by its backward op for t's shape only: the add may take t's bytes."""
    x, b = mx.sym.var("x"), mx.sym.var("b")
    t = mx.sym._mul_scalar(x, scalar=2.0, name="t")
    y = mx.sym.broadcast_add(t, b, name="y")
    g = passes.compile_graph(_state(mx.sym.sum(mx.sym.exp(y)), grad_req={"x": "write", "b": "write"},
                                    x=(4, 5), b=(1, 5)))
    bwd = next(n for n in g.nodes if n.op is not None and n.op.name == "_backward_broadcast_add")
    tkey, ykey = (id(t._outputs[0][0]), 0), (id(y._outputs[0][0]), 0)
    assert any((id(c), i) == tkey for c, i in bwd.inputs)  # the backward op does take t ...
    assert g.inplace.get(ykey) == tkey  # ... yet y is written over t: only t's shape is read later
    exe = mx.sym.sum(mx.sym.exp(y)).simple_bind(mx.cpu(), x=(4, 5), b=(1, 5))
    xv, bv = np.random.default_rng(0).uniform(-1, 1, (4, 5)), np.random.default_rng(1).uniform(-1, 1, (1, 5))
    exe.forward(is_train=True, x=xv, b=bv)
    exe.backward(mx.nd.ones((1,)))
    e = np.exp(2 * xv + bv)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), 2 * e, rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["b"].asnumpy(), e.sum(axis=0, keepdims=True), rtol=1e-5)
