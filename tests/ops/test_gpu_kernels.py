"""The tensor-op kernels on CuPy arrays give the numpy results (skipped without CuPy and a GPU)."""
import os
import sys

import numpy as np
import pytest

cupy = pytest.importorskip("cupy")
try:
    cupy.cuda.runtime.getDeviceCount()
except Exception:  # pragma: no cover - depends on the machine
    pytest.skip("CuPy is installed but no GPU is usable", allow_module_level=True)

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import run  # noqa: E402

from ember import ops  # noqa: E402
from ember.ops import OpContext  # noqa: E402

rng = np.random.default_rng(0)
A = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
B = rng.uniform(0.5, 2, (4,)).astype(np.float32)
IDX = np.array([2, 0, 1], np.float32)

CASES = [
    ("broadcast_add", [A, B], {}), ("broadcast_mul", [A, B], {}), ("broadcast_div", [A, B], {}),
    ("broadcast_greater", [A, B], {}), ("elemwise_sub", [A, A], {}), ("_plus_scalar", [A], {"scalar": 2}),
    ("_rdiv_scalar", [A], {"scalar": 2}), ("exp", [A], {}), ("sigmoid", [A], {}), ("erf", [A], {}),
    ("sum", [A], {"axis": 1}), ("max", [A], {}), ("norm", [A], {"axis": 0}), ("argmax", [A], {"axis": 1}),
    ("Reshape", [A], {"shape": (-1, 2)}), ("transpose", [A], {}), ("tile", [A], {"reps": (2, 1)}),
    ("slice", [A], {"begin": (1, None), "end": (3, None)}), ("take", [A, IDX], {}),
    ("pick", [A, IDX], {"axis": 1}), ("one_hot", [IDX], {"depth": 4}), ("Concat", [A, A], {"num_args": 2}),
    ("SliceChannel", [A], {"num_outputs": 2}), ("dot", [A, A.T.copy()], {}), ("topk", [A], {"k": 2}),
    ("sort", [A], {}), ("clip", [A], {"a_min": 0.8, "a_max": 1.5}),
    ("_backward_broadcast_add", [A, A, B], {}), ("_backward_sum", [A.sum(1), A, A.sum(1)], {"axis": 1}),
    ("sgd_update", [A, A], {"lr": 0.1, "wd": 0.01}),
]


@pytest.mark.parametrize("name,inputs,attrs", CASES, ids=[c[0] for c in CASES])
def test_kernel_on_cupy_matches_numpy(name, inputs, attrs):
    want = run(name, inputs, attrs, all_outputs=True)
    op = ops.get(name)
    a = op.parse_attrs(attrs)
    outs = [cupy.empty(w.shape, dtype=w.dtype) for w in want]
    op.kernel("gpu")(OpContext(cupy, rng=np.random.default_rng(0)), a, [cupy.asarray(x) for x in inputs], outs, [])
    for got, w in zip(outs, want):
        np.testing.assert_allclose(cupy.asnumpy(got), w, rtol=1e-5, atol=1e-6)


def test_random_on_cupy_is_the_host_stream():
    op = ops.get("_random_uniform")
    a = op.parse_attrs({"shape": (5,)})
    out = cupy.empty(5, dtype=np.float32)
    op.kernel("gpu")(OpContext(cupy, rng=np.random.default_rng(3)), a, [], [out], [])
    np.testing.assert_array_equal(cupy.asnumpy(out), run("_random_uniform", [], {"shape": (5,)}, seed=3))
