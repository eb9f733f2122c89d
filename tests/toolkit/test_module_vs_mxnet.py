"""Three Module training steps (SGD momentum + wd, BatchNorm in training mode) against MXNet 1.9.1.

The symbol JSON was written by MXNet; parameters start from the recipe in model_recipe.py; the
fixture holds MXNet's batches, its outputs at each step and its parameters after the last update.
"""
import os

import numpy as np
import pytest

import ember as mx
from model_recipe import recipe_value

PREFIX = os.path.join(os.path.dirname(__file__), "..", "data", "models", "toolkit-lenet-bn")
STEPS = 3


@pytest.fixture(scope="module")
def trained():
    rec = np.load(PREFIX + "-steps.npz")
    sym = mx.sym.load(PREFIX + "-symbol.json")
    batch_shape = rec["data_0"].shape
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=[("data", batch_shape)], label_shapes=[("softmax_label", batch_shape[:1])])
    arg_shapes, _, aux_shapes = sym.infer_shape(data=batch_shape, softmax_label=batch_shape[:1])
    inputs = ("data", "softmax_label")
    args = {n: mx.nd.array(recipe_value(n, s)) for n, s in zip(sym.list_arguments(), arg_shapes) if n not in inputs}
    aux = {n: mx.nd.array(recipe_value(n, s)) for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    mod.init_params(arg_params=args, aux_params=aux)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3})
    outputs = []
    for step in range(STEPS):
        batch = mx.io.DataBatch([mx.nd.array(rec[f"data_{step}"])], [mx.nd.array(rec[f"label_{step}"])])
        mod.forward_backward(batch)
        outputs.append(mod.get_outputs()[0].asnumpy())
        mod.update()
    return rec, outputs, mod.get_params()


def test_outputs_at_each_step(trained):
    rec, outputs, _ = trained
    for step, out in enumerate(outputs):
        np.testing.assert_allclose(out, rec[f"output_{step}"], rtol=1e-4, atol=1e-6, err_msg=f"step {step}")


def test_parameters_and_bn_statistics_after_updates(trained):
    rec, _, (args, aux) = trained
    for prefix, params in (("arg:", args), ("aux:", aux)):
        names = {k[4:] for k in rec.files if k.startswith(prefix)}
        assert names == set(params)
        for name in names:
            want = rec[prefix + name]
            np.testing.assert_allclose(params[name].asnumpy(), want, rtol=1e-4,
                                       atol=1e-5 * max(1.0, float(np.abs(want).max())), err_msg=name)
