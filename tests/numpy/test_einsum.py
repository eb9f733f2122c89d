"""mx.np.einsum (`_npi_einsum`): values against numpy for every subscript form, gradients against finite
differences (autograd, and the symbolic gradient pass on an executor), hybridized = imperative, and
MXNet's errors for bad subscripts."""
import numpy as onp
import pytest

import ember as mx
from ember import np
from ember.base import MXNetError
from ember.test_utils import check_numeric_gradient

from ._np_blocks import FnBlock

pytestmark = pytest.mark.usefixtures("np_semantics")

# (subscripts, operand shapes): implicit and explicit output, ellipses, traces/diagonals, broadcasting
# of size-1 labels, 0-d and zero-size operands, three operands, upper-case labels
CASES = [
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("ij->i", [(3, 4)]),
    ("ji", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("...j->...", [(3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("i,j", [(2,), (3,)]),
    ("ij,j", [(3, 4), (4,)]),
    ("...j,j", [(2, 3, 4), (4,)]),
    ("...,...", [(), (2, 3)]),
    (",ij", [(), (2, 3)]),
    ("ijk,jil->kl", [(3, 4, 5), (4, 3, 2)]),
    ("ki,...k->i...", [(3, 2), (4, 3)]),
    ("k...,jk", [(3, 2), (4, 3)]),
    ("ij,jk", [(5, 0), (0, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 5), (5, 2)]),
    ("ij, ij -> i", [(1, 4), (2, 4)]),
    ("...ij,...jk->...ik", [(3, 2, 1, 4), (3, 2, 4, 2)]),
    ("...ij,...jk->...ik", [(1, 4), (4, 2)]),
    ("iij->j", [(3, 3, 2)]),
    ("iji,j->ij", [(2, 3, 2), (3,)]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]),
    ("ij->", [(3, 4)]),
]


def _operands(shapes, dtype, seed=0):
    rng = onp.random.RandomState(seed)
    return [rng.uniform(-1, 1, s).astype(dtype) for s in shapes]


def _expected(subscripts, xs):
    return onp.einsum(subscripts, *[x.astype(onp.float64) for x in xs])


def _numeric_grads(subscripts, xs, head, eps=1e-6):
    """d sum(head * einsum(xs)) / d xs by central differences (float64)."""
    grads = []
    for k, x in enumerate(xs):
        g = onp.zeros_like(x)
        for idx in onp.ndindex(*x.shape):
            hi = [y.copy() for y in xs]
            lo = [y.copy() for y in xs]
            hi[k][idx] += eps
            lo[k][idx] -= eps
            g[idx] = (onp.sum(head * onp.einsum(subscripts, *hi)) - onp.sum(head * onp.einsum(subscripts, *lo))) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("subscripts,shapes", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_values_match_numpy(subscripts, shapes, dtype):
    xs = _operands(shapes, onp.float64)
    if dtype == "int32":
        xs = [onp.round(x * 4) for x in xs]
    xs = [x.astype(dtype) for x in xs]
    want = _expected(subscripts, xs)
    for optimize in (False, True):
        got = np.einsum(subscripts, *[np.array(x, dtype=dtype) for x in xs], optimize=optimize)
        assert isinstance(got, np.ndarray)
        assert got.dtype == onp.dtype(dtype) and got.shape == want.shape
        onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4 if dtype == "float32" else 1e-10, atol=1e-5)


@pytest.mark.parametrize("subscripts,shapes", CASES)
def test_gradients_match_finite_differences(subscripts, shapes):
    xs = _operands(shapes, onp.float64, seed=1)
    head = onp.random.RandomState(2).uniform(0.5, 1.5, _expected(subscripts, xs).shape)
    arrs = [np.array(x, dtype="float64") for x in xs]
    for a in arrs:
        a.attach_grad()
    with mx.autograd.record():
        out = np.einsum(subscripts, *arrs)
    out.backward(np.array(head, dtype="float64"))
    for a, want in zip(arrs, _numeric_grads(subscripts, xs, head)):
        assert a.grad.shape == a.shape
        onp.testing.assert_allclose(a.grad.asnumpy(), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("subscripts,shapes", [c for c in CASES if 0 not in sum(c[1], ()) and () not in c[1]])
def test_symbolic_gradient_on_an_executor(subscripts, shapes):
    # the legacy symbol, bound to an executor: shape inference, the kernels and the symbolic gradient pass
    # (check_numeric_gradient writes arguments with x[:], which a 0-d operand does not take)
    names = [f"x{i}" for i in range(len(shapes))]
    sym = mx.sym._npi_einsum(*[mx.sym.var(n) for n in names], subscripts=subscripts, num_args=len(shapes))
    check_numeric_gradient(sym, dict(zip(names, _operands(shapes, onp.float64, seed=3))),
                           numeric_eps=1e-6, rtol=1e-5, atol=1e-7, dtype=onp.float64)


@pytest.mark.parametrize("subscripts,shapes", [CASES[2], CASES[7], CASES[12], CASES[17], CASES[18], CASES[20]])
@pytest.mark.parametrize("static_alloc", [False, True])
def test_hybridized_equals_imperative(subscripts, shapes, static_alloc):
    # static_alloc keeps the block off MXNet's inlining under autograd: the traced graph runs on an executor
    xs = _operands(shapes, onp.float32, seed=4)

    def run(hybridize):
        block = FnBlock(lambda F, *ops: F.np.einsum(subscripts, *ops, optimize=True))
        if hybridize:
            block.hybridize(static_alloc=static_alloc)
        arrs = [np.array(x) for x in xs]
        for a in arrs:
            a.attach_grad()
        plain = block(*arrs).asnumpy()  # outside autograd too
        with mx.autograd.record():
            out = block(*arrs) * 2
        out.backward()
        return [plain, out.asnumpy()] + [a.grad.asnumpy() for a in arrs]

    for got, want in zip(run(True), run(False)):
        onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_traced_graph_is_mxnets_op():
    block = FnBlock(lambda F, a, b: F.np.einsum("ij,jk->ik", a, b))
    block.hybridize()
    block(np.ones((2, 3)), np.ones((3, 4)))
    js = block._cached_graph[1].tojson()
    assert '"_npi_einsum"' in js and '"subscripts": "ij,jk->ik"' in js


def test_out_and_operand_checks():
    a, b = np.array(onp.arange(6.0).reshape(2, 3)), np.array(onp.arange(3.0))
    out = np.zeros((2,))
    assert np.einsum("ij,j->i", a, b, out=out) is out
    onp.testing.assert_allclose(out.asnumpy(), onp.arange(6.0).reshape(2, 3) @ onp.arange(3.0))
    with pytest.raises(TypeError):
        np.einsum("ij,j->i", a, onp.arange(3.0))
    with pytest.raises(ValueError, match="optimize"):
        np.einsum("ij,j->i", a, b, optimize="greedy")
    with pytest.raises(MXNetError, match="sublist"):
        np.einsum(a, [0, 1])
    with pytest.raises(MXNetError, match="No input operands"):
        np.einsum("ij")


@pytest.mark.parametrize("subscripts,shapes,message", [
    ("i#,j", [(2, 2), (2,)], "Character # is not a valid symbol"),
    ("ij->i->j", [(2, 2)], "only contain one '->'"),
    ("ij-i", [(2, 2)], "only contain one '->'"),
    ("ij,jk", [(2, 2)], "Number of einsum subscripts must be equal to the number of operands"),
    ("ijk", [(2, 2)], "does not contain the correct number of indices for operand 0"),
    ("ij,jk", [(2, 3), (4, 2)], "Size of label 'j' for operand 1"),
    ("ij->k", [(2, 2)], "Output character k did not appear in the input"),
    ("ij->ii", [(2, 2)], "appears more than once"),
    ("..i.,i", [(2, 2), (2,)], "Invalid Ellipses"),
    ("...ijk", [(2, 2)], "Ellipses lengths do not match"),
    ("ii", [(2, 3)], "collapsing index 'i'"),
])
def test_bad_subscripts_raise_mxnet_error(subscripts, shapes, message):
    ops = [np.ones(s) for s in shapes]
    with pytest.raises(MXNetError, match=message):
        np.einsum(subscripts, *ops)
    # traced: the graph's shape inference reports the same problem when the block runs
    block = FnBlock(lambda F, *xs: F.np.einsum(subscripts, *xs))
    block.hybridize()
    with pytest.raises(MXNetError, match=message):
        block(*ops)


def test_mixed_dtypes_raise_mxnet_error():
    with pytest.raises(MXNetError, match="dtype"):
        np.einsum("i,i", np.ones(3, dtype="float32"), np.ones(3, dtype="float64"))
