"""Every NN kernel that declares inplace=[(i, o)] gives the same result when output o is input i's buffer."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import run_op  # noqa: E402

from ember import ops  # noqa: E402

rng = np.random.default_rng(13)
A = (3, 4)


def r(*shape):
    return rng.standard_normal(shape)


# op -> (inputs, attrs, aux, is_train); shapes are small, values arbitrary (only aliasing is tested)
CASES = {
    "Activation": ([r(*A)], {"act_type": "softrelu"}, None, False),
    "_backward_Activation": ([r(*A), rng.uniform(0.1, 0.9, A)], {"act_type": "sigmoid"}, None, False),
    "LeakyReLU": ([r(*A)], {"act_type": "gelu"}, None, False),
    "_backward_LeakyReLU": ([r(*A), r(*A)], {"act_type": "elu", "slope": 0.3}, None, False),
    "softmax": ([r(*A)], {"axis": 0, "temperature": 2.0}, None, False),
    "_backward_softmax": ([r(*A), rng.uniform(0, 1, A)], {}, None, False),
    "log_softmax": ([r(*A)], {}, None, False),
    "_backward_log_softmax": ([r(*A), -rng.uniform(0, 2, A)], {}, None, False),
    "SoftmaxActivation": ([r(2, 3, 4)], {"mode": "channel"}, None, False),
    "_backward_SoftmaxActivation": ([r(2, 3, 4), rng.uniform(0, 1, (2, 3, 4))], {"mode": "channel"}, None, False),
    "SoftmaxOutput": ([r(*A), np.array([0.0, 2, 3])], {}, None, True),
    "_backward_SoftmaxOutput": ([rng.uniform(0, 1, A), np.array([0.0, 2, 3])], {"normalization": "batch"}, None, True),
    "LinearRegressionOutput": ([r(*A), r(*A)], {}, None, True),
    "_backward_LinearRegressionOutput": ([r(*A), r(*A)], {"grad_scale": 2.0}, None, True),
    "LogisticRegressionOutput": ([r(*A), r(*A)], {}, None, True),
    "_backward_LogisticRegressionOutput": ([r(*A), r(*A)], {}, None, True),
    "MAERegressionOutput": ([r(*A), r(*A)], {}, None, True),
    "_backward_MAERegressionOutput": ([r(*A), r(*A)], {}, None, True),
    "MakeLoss": ([r(*A)], {}, None, True),
    "_backward_MakeLoss": ([r(*A)], {"normalization": "valid"}, None, True),
    "BlockGrad": ([r(*A)], {}, None, False),
    "Dropout": ([r(*A)], {"p": 0.5}, None, True),
    "_backward_Dropout": ([r(*A), rng.integers(0, 2, A) * 2.0], {}, None, True),
    "BatchNorm": ([r(4, 3, 2), rng.uniform(0.5, 1.5, 3), r(3)], {"fix_gamma": False}, [r(3), rng.uniform(1, 2, 3)], True),
    "_backward_BatchNorm": ([r(4, 3, 2), r(4, 3, 2), rng.uniform(0.5, 1.5, 3), r(3), rng.uniform(0.5, 1.5, 3)],
                            {"fix_gamma": False}, None, True),
    "LayerNorm": ([r(3, 5), rng.uniform(0.5, 1.5, 5), r(5)], {}, None, False),
    "_backward_LayerNorm": ([r(3, 5), r(3, 5), rng.uniform(0.5, 1.5, 5), r(3, 1), rng.uniform(0.5, 1.5, (3, 1))],
                            {}, None, False),
}


def test_every_declared_nn_op_has_a_case():
    nn_modules = {"nn_activation", "nn_softmax", "nn_loss", "nn_dropout", "nn_norm", "nn_dense", "nn_conv",
                  "nn_pool", "nn_embedding", "nn_rnn"}
    mine = [n for n in ops.list() if ops.get(n).inplace and
            ops.get(n).kernel("cpu").__module__.rsplit(".", 1)[-1] in nn_modules]
    missing = sorted(set(mine) - set(CASES))
    assert not missing, f"add in-place cases for {missing}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_aliased_output_gives_same_result(name):
    inputs, attrs, aux, is_train = CASES[name]
    op = ops.get(name)
    a = op.parse_attrs(attrs)
    expected = run_op(name, inputs, attrs, aux=[x.copy() for x in aux] if aux else None, is_train=is_train)
    for i, o in op.inplace:
        ins = [x.copy() for x in inputs]
        outs = [e.copy() * np.nan for e in expected]
        outs[o] = ins[i]  # the planner hands the kernel the input's buffer as this output
        op.kernel("cpu")(ops.OpContext(np, is_train=is_train, rng=np.random.default_rng(0)), a, ins, outs,
                         [x.copy() for x in aux] if aux else [])
        for k, (got, want) in enumerate(zip(outs, expected)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{name}: output {k}")
