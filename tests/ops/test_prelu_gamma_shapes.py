"""LeakyReLU prelu with gamma of shape (1,), (C,) or data's leading dimensions: values against numpy,
gradients (data and gamma) against finite differences."""
import numpy as np
import pytest

from ._gradcheck import check_grad, run


def _away_from_zero(shape, seed):
    x = np.random.default_rng(seed).uniform(-1, 1, shape)
    x[np.abs(x) < 0.05] = 0.5
    return x


@pytest.mark.parametrize("xshape,gshape,view", [
    ((3, 4), (3, 4), (3, 4)),
    ((3, 4, 2, 5), (3, 4), (3, 4, 1, 1)),
    ((3, 4, 2), (4,), (1, 4, 1)),
    ((3, 4), (1,), (1, 1)),
])
def test_prelu_gamma_shapes(xshape, gshape, view):
    x = _away_from_zero(xshape, 0)
    gamma = np.random.default_rng(1).uniform(0.1, 0.5, gshape)
    out = run("LeakyReLU", [x, gamma], {"act_type": "prelu"})
    np.testing.assert_allclose(out, np.where(x > 0, x, x * gamma.reshape(view)), rtol=1e-12)
    check_grad("LeakyReLU", [x, gamma], {"act_type": "prelu"})


def test_prelu_gamma_of_another_shape_is_a_shape_error():
    from ember.base import ShapeError
    with pytest.raises(ShapeError, match="prelu gamma"):
        run("LeakyReLU", [np.ones((3, 4, 2)), np.ones((4, 2))], {"act_type": "prelu"})
