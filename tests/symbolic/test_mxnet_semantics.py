"""Symbol behaviours MXNet 1.9.1's own tests rely on."""
import ember as mx


def test_get_children_of_a_multi_output_node_lists_its_inputs_once():
    data = mx.sym.var("d")
    split = mx.sym.split(data, num_outputs=3)
    assert split.get_children().list_outputs() == ["d"]
    assert split[2].get_children().list_outputs() == ["d"]
    group = mx.sym.Group([mx.sym.var("a") + 1, mx.sym.var("b") * 2])
    assert group.get_children().list_outputs() == ["a", "b"]
    twice = data + data  # one node reading the same input twice lists it twice, as MXNet
    assert [c.list_outputs() for c in twice.get_children()] == [["d"], ["d"]]
    assert data.get_children() is None
    fc = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    assert fc.get_children().list_outputs() == ["d", "fc_weight", "fc_bias"]


def test_none_is_a_value_for_optional_attributes():
    x = mx.sym.var("x")
    assert mx.sym.sort(x, axis=None).attr("axis") == "None"
    assert mx.sym.sort(x).attr("axis") is None           # not given: the default
    # None for an input still leaves the input out
    fc = mx.sym.FullyConnected(x, None, num_hidden=2, name="fc", bias=None)
    assert fc.list_arguments() == ["x", "fc_weight", "fc_bias"]
