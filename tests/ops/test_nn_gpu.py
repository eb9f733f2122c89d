"""The NN kernels on CuPy arrays (ctx.xp = cupy) agree with the numpy ones. Skipped without CuPy/GPU."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import run_op  # noqa: E402

from ember import ops  # noqa: E402
from ember.ops import OpContext  # noqa: E402

cp = pytest.importorskip("cupy")
try:
    cp.cuda.runtime.getDeviceCount()
except Exception:  # pragma: no cover - CuPy installed without a usable GPU
    pytest.skip("no CUDA device", allow_module_level=True)

rng = np.random.default_rng(11)


def run_gpu(name, inputs, attrs, aux=None, is_train=False):
    op = ops.get(name)
    a = op.parse_attrs(attrs)
    _, outs, _ = op.shapes(a, [x.shape for x in inputs], [x.shape for x in aux] if aux else None)
    _, dts, _ = op.dtypes(a, [x.dtype for x in inputs])
    outputs = [cp.empty(s, dtype=d) for s, d in zip(outs, dts)]
    ctx = OpContext(cp, is_train=is_train, device="gpu", rng=np.random.default_rng(0))
    op.kernel("gpu")(ctx, a, [cp.asarray(x) for x in inputs], outputs, [cp.asarray(x) for x in (aux or [])])
    return [cp.asnumpy(o) for o in outputs]


CASES = [
    ("FullyConnected", [(4, 6), (3, 6), (3,)], {"num_hidden": 3}),
    ("Convolution", [(2, 4, 7, 6), (6, 2, 3, 3), (6,)], dict(kernel=(3, 3), num_filter=6, num_group=2, pad=(1, 1))),
    ("Convolution", [(2, 3, 7, 6), (3, 1, 3, 3), (3,)], dict(kernel=(3, 3), num_filter=3, num_group=3)),
    ("Deconvolution", [(2, 3, 4, 4), (3, 2, 3, 3)], dict(kernel=(3, 3), num_filter=2, stride=(2, 2), adj=(1, 1))),
    ("Pooling", [(2, 3, 7, 6)], dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                                     pooling_convention="full")),
    ("Pooling", [(2, 3, 7, 6)], dict(kernel=(2, 2), pool_type="max")),
    ("Activation", [(3, 4)], {"act_type": "softrelu"}),
    ("LeakyReLU", [(3, 4)], {"act_type": "gelu"}),
    ("softmax", [(3, 4)], {"axis": 0}),
    ("SoftmaxOutput", [(3, 4), (3,)], {}),
    ("LayerNorm", [(3, 4), (4,), (4,)], {}),
    ("RNN", [(3, 2, 2), (3 * 3 * (2 + 3) + 6 * 3,), (1, 2, 3)], dict(mode="gru", state_size=3, num_layers=1)),
]


@pytest.mark.parametrize("name,shapes,attrs", CASES)
def test_gpu_matches_cpu(name, shapes, attrs):
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if name == "SoftmaxOutput":
        inputs[1] = np.array([0, 3, 1], np.float32)
    cpu = run_op(name, inputs, attrs)
    gpu = run_gpu(name, inputs, attrs)
    for a, b in zip(cpu, gpu):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_gpu_batchnorm_and_embedding_backward():
    x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    aux_c = [np.zeros(3, np.float32), np.ones(3, np.float32)]
    cpu = run_op("BatchNorm", [x, np.ones(3, np.float32), np.zeros(3, np.float32)], {}, aux=aux_c, is_train=True)
    gpu = run_gpu("BatchNorm", [x, np.ones(3, np.float32), np.zeros(3, np.float32)], {},
                  aux=[np.zeros(3, np.float32), np.ones(3, np.float32)], is_train=True)
    np.testing.assert_allclose(gpu[0], cpu[0], rtol=1e-4, atol=1e-5)
    idx = np.array([1, 1, 0], np.float32)
    head = rng.standard_normal((3, 2)).astype(np.float32)
    attrs = {"input_dim": 3, "output_dim": 2}
    np.testing.assert_allclose(run_gpu("_backward_Embedding", [head, idx], attrs)[0],
                               run_op("_backward_Embedding", [head, idx], attrs)[0], rtol=1e-5)
