"""Under NumPy shape semantics, () and 0 are real sizes for symbolic inference and binding too."""
import numpy as np

import ember as mx


def test_zero_dim_and_zero_size_arrays_bind_and_run():
    with mx.np_shape(True):
        d = mx.sym.var("data")
        s = mx.sym.contrib.index_array(d)
        assert s.infer_shape(data=())[1] == [(0,)]
        assert s.infer_shape(data=(2, 0))[1] == [(2, 0, 2)]
        out = s.bind(mx.cpu(), {"data": mx.nd.array(np.ones(()))}).forward()[0]
        assert out.shape == (0,)
        y = mx.sym.relu(d) * 2
        g = mx.nd.zeros((0, 3))
        ex = y.bind(mx.cpu(), {"data": mx.nd.array(np.ones((0, 3)))}, args_grad={"data": g})
        assert ex.forward(is_train=True)[0].shape == (0, 3)
        ex.backward(mx.nd.array(np.ones((0, 3))))
        assert g.shape == (0, 3)


def test_without_numpy_shape_semantics_zero_stays_unknown():
    d = mx.sym.var("data")
    assert mx.sym.relu(d).infer_shape(data=(2, 0)) == (None, None, None)
