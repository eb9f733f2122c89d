"""slice/slice_axis keep an unknown input axis unknown (MXNet), and the graph pass keeps that answer."""
import ember as mx


def test_unknown_axis_stays_unknown_through_slice():
    data = mx.sym.var("data", shape=(0, 20))
    out = mx.sym.slice(data, begin=(None, 3), end=(5, 10))
    assert out.infer_shape_partial()[1] == [(0, 7)]  # 0: unknown (MXNet 1.x), though end=5 would bound it
    out = mx.sym.slice_axis(data, axis=0, begin=0, end=5)
    assert out.infer_shape_partial()[1] == [(0, 20)]
    known = mx.sym.slice(mx.sym.var("x"), begin=(1, 3), end=(5, 10), step=(2, 1))
    assert known.infer_shape(x=(8, 20))[1] == [(2, 7)]


def test_ops_that_need_whole_shapes_are_still_probed():
    fc = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=4, name="fc")
    args, outs, _ = fc.infer_shape_partial(x=(0, 6))
    assert dict(zip(fc.list_arguments(), args))["fc_weight"] == (4, 6)
