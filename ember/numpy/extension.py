"""`mx.npx`: MXNet's numpy-extension namespace: the switches (`set_np`, `reset_np`, `is_np_array`,
`is_np_shape`) and the neural-network operators under their npx names (`npx.relu`,
`npx.softmax`, `npx.fully_connected`, ...), which are the registry's operators returning
`mx.np.ndarray`s.

`set_np()` turns on NumPy array semantics, which ember does not support: it raises MXNetError
(see `ember.util`); `set_np(shape=True, array=False)` and `reset_np()` work.
"""
from __future__ import annotations

from ..context import cpu, current_context, gpu, num_gpus  # noqa: F401
from ..imperative.creation import waitall  # noqa: F401
from ..imperative.invoke import call as _call
from ..util import is_np_array, is_np_shape, reset_np, set_np, use_np, use_np_array, use_np_shape  # noqa: F401
from .multiarray import _as_np

# npx name -> registry operator (MXNet registers these as _npx_<name> aliases of the same kernels)
OPERATORS = {
    "relu": "relu", "sigmoid": "sigmoid", "softmax": "softmax", "log_softmax": "log_softmax",
    "activation": "Activation", "leaky_relu": "LeakyReLU", "batch_norm": "BatchNorm", "layer_norm": "LayerNorm",
    "convolution": "Convolution", "deconvolution": "Deconvolution", "fully_connected": "FullyConnected",
    "pooling": "Pooling", "dropout": "Dropout", "embedding": "Embedding", "one_hot": "one_hot", "pick": "pick",
    "topk": "topk", "batch_dot": "batch_dot", "batch_flatten": "Flatten", "reshape_like": "reshape_like",
    "broadcast_like": "broadcast_like", "sequence_mask": "SequenceMask", "erf": "erf", "erfinv": "erfinv",
    "gamma": "gamma", "gammaln": "gammaln", "smooth_l1": "smooth_l1", "gather_nd": "gather_nd", "rnn": "RNN",
    "arange_like": "_contrib_arange_like",
}


def _operator(npx_name: str, op: str):
    def fn(*args, **kwargs):
        return _as_np(_call(op, args, kwargs))
    fn.__name__ = npx_name
    fn.__doc__ = f"npx.{npx_name}: the registry operator `{op}`, returning mx.np.ndarray."
    return fn


for _name, _op in OPERATORS.items():
    globals()[_name] = _operator(_name, _op)
