"""mx.np.fallback / fallback_linalg (MXNet 1.9.1's): numpy's own functions reached with mx.np arrays through
NEP 18, results back as mx.np arrays (0-d ones stay 0-d), refused while autograd records."""
import numpy as onp
import pytest

import ember as mx
from ember import np

pytestmark = pytest.mark.usefixtures("np_semantics")


def test_fallback_functions_take_and_give_mx_np_arrays():
    v = onp.array([[3.0, 0.0, 2.0], [0.0, 5.0, 0.0]], onp.float32)
    a = np.array(v)
    got = np.argwhere(a)
    assert isinstance(got, np.ndarray) and got.context == a.context
    onp.testing.assert_array_equal(got.asnumpy(), onp.argwhere(v))
    assert int(np.count_nonzero(a)) == 3
    assert float(np.nanmax(np.array([1.0, onp.nan, 4.0]))) == 4.0  # a numpy scalar, as MXNet hands it back
    q, r = np.linalg.qr(np.array(onp.eye(3) * 2))
    onp.testing.assert_allclose((q @ r).asnumpy(), onp.eye(3) * 2, atol=1e-6)
    assert int(np.linalg.matrix_rank(np.array(onp.eye(4)))) == 4


def test_zero_d_results_stay_zero_d():
    c = np.cov(np.array([1.0, 2.0, 4.0]))
    assert isinstance(c, np.ndarray) and c.shape == ()
    onp.testing.assert_allclose(float(c), onp.cov([1.0, 2.0, 4.0]))
    assert onp.cov(np.array([1.0, 2.0, 4.0])).shape == ()  # numpy's own function on an mx.np array


def test_mxnets_names_and_removed_functions():
    assert len(np.fallback.__all__) == 84 and "argwhere" in np.fallback.__all__ and "nanstd" not in np.fallback.__all__
    assert set(np.fallback_linalg.__all__) == {"cond", "lstsq", "matrix_power", "matrix_rank", "multi_dot", "qr"}
    assert np.flatnonzero is not np.fallback.flatnonzero  # mx.np's own function wins
    onp.testing.assert_array_equal(np.fallback.msort(np.array([[3, 1], [1, 2]])).asnumpy(), [[1, 1], [3, 2]])
    onp.testing.assert_array_equal(np.fallback.in1d(np.array([[1, 2], [3, 4]]), np.array([2, 3])).asnumpy(),
                                   [False, True, True, False])
    with pytest.raises(RuntimeError, match="numpy_financial"):
        np.fallback.npv(0.1, [1.0, 2.0])


def test_refused_while_recording():
    x = np.array([1.0, 0.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        with pytest.raises(ValueError, match="autograd"):
            np.argwhere(x)
