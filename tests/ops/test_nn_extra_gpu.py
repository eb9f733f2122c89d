"""The kernels added for Gluon layers (3-D and pointwise convolution, 3-D and channel-last pooling,
InstanceNorm, GroupNorm, BatchNorm variants) on CuPy agree with numpy. Skipped without CuPy/GPU."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import run_op  # noqa: E402
from test_nn_gpu import run_gpu  # noqa: E402  (skips this module too when CuPy or a GPU is missing)

rng = np.random.default_rng(12)
CONV3D = dict(kernel=(3, 2, 2), num_filter=4, num_group=2, pad=(1, 0, 1), stride=(2, 1, 1), dilate=(1, 2, 1))

CASES = [
    ("Convolution", [(2, 4, 5, 6, 4), (4, 2, 3, 2, 2), (4,)], CONV3D),
    ("_backward_Convolution", [(2, 4, 3, 4, 5), (2, 4, 5, 6, 4), (4, 2, 3, 2, 2)], CONV3D),
    ("Deconvolution", [(1, 4, 2, 3, 3), (4, 2, 3, 3, 2)], dict(kernel=(3, 3, 2), num_filter=4, num_group=2,
                                                                 stride=(2, 2, 1), adj=(1, 0, 0))),
    ("Pooling", [(2, 3, 5, 6, 4)], dict(kernel=(3, 3, 2), stride=(2, 2, 2), pad=(1, 1, 1), pool_type="avg",
                                        pooling_convention="full", count_include_pad=False)),
    ("Pooling", [(2, 5, 6, 4, 3)], dict(kernel=(2, 2, 2), pool_type="max", layout="NDHWC")),
    ("_backward_Pooling", [(2, 3, 2, 3, 2), (2, 3, 5, 6, 4), (2, 3, 2, 3, 2)], dict(kernel=(2, 2, 2), stride=(2, 2, 2),
                                                                                     pool_type="avg")),
    ("Convolution", [(2, 4, 5, 6), (6, 4, 1, 1), (6,)], dict(kernel=(1, 1), num_filter=6)),
    ("_backward_Convolution", [(2, 6, 5, 6), (2, 4, 5, 6), (6, 2, 1, 1)], dict(kernel=(1, 1), num_filter=6,
                                                                              num_group=2, no_bias=True)),
    ("InstanceNorm", [(2, 3, 4, 5), (3,), (3,)], {}),
    ("_backward_InstanceNorm", [(2, 3, 4, 5), (2, 3, 4, 5), (3,), (2, 3), (2, 3)], {}),
    ("GroupNorm", [(2, 4, 3, 3), (2,), (2,)], dict(num_groups=2, output_mean_var=True)),
    ("_backward_GroupNorm", [(2, 4, 3, 3), (2, 4, 3, 3), (2,), (2, 2), (2, 2)], dict(num_groups=2)),
]


@pytest.mark.parametrize("name,shapes,attrs", CASES)
def test_gpu_matches_cpu(name, shapes, attrs):
    inputs = [rng.uniform(0.5, 1.5, s).astype(np.float32) for s in shapes]
    cpu = run_op(name, inputs, attrs)
    gpu = run_gpu(name, inputs, attrs)
    for a, b in zip(cpu, gpu):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,attrs", [("_contrib_SyncBatchNorm", {"key": "k", "fix_gamma": False}),
                                        ("_contrib_BatchNormWithReLU", {"fix_gamma": False})])
def test_batchnorm_variants_on_gpu(name, attrs):
    inputs = [rng.standard_normal((4, 3, 2)).astype(np.float32), np.ones(3, np.float32), np.zeros(3, np.float32)]
    aux_cpu = [np.zeros(3, np.float32), np.ones(3, np.float32)]
    cpu = run_op(name, inputs, attrs, aux=aux_cpu, is_train=True)
    gpu = run_gpu(name, inputs, attrs, aux=[np.zeros(3, np.float32), np.ones(3, np.float32)], is_train=True)
    for a, b in zip(cpu, gpu):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
