"""Initializers the legacy RNN cells attach to their variables (MXNet's `init.LSTMBias`, `init.FusedRNN`).

They are registered with `mx.init`'s registry, so the `__init__` attribute a cell writes on a
variable (their `dumps()` JSON) brings them back when a Module initializes its parameters.
"""
from __future__ import annotations

from typing import Optional, Union

from .. import initializer
from ..initializer import InitDesc, Initializer


@initializer.register
class LSTMBias(Initializer):
    """Every LSTM bias 0 except the forget gate's (the second of the four gates), set to `forget_bias`."""

    def __init__(self, forget_bias: float = 1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, _, arr) -> None:
        if arr.shape[0] % 4:
            raise initializer.InitializerError(
                f"LSTMBias: an LSTM bias has 4 gates of equal size, got length {arr.shape[0]}")
        h = arr.shape[0] // 4
        arr[:] = 0.0
        arr[h:2 * h] = self.forget_bias


@initializer.register
class FusedRNN(Initializer):
    """Initialize the packed parameter vector of a FusedRNNCell gate by gate.

    The vector is unpacked into the per-gate arrays of the equivalent unfused cells, each is
    initialized by `init` (the global initializer when None) according to its name, LSTM forget
    gate biases get `forget_bias`, and the arrays are packed back.
    """

    def __init__(self, init: Union[None, str, Initializer], num_hidden: int, num_layers: int, mode: str,
                 bidirectional: bool = False, forget_bias: float = 1.0):
        if isinstance(init, str):
            init = initializer.create(init)
        super().__init__(init=init.dumps() if init is not None else None, num_hidden=num_hidden,
                         num_layers=num_layers, mode=mode, bidirectional=bidirectional,
                         forget_bias=forget_bias)
        self._init: Optional[Initializer] = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc, arr) -> None:
        from .fused import FusedRNNCell
        cell = FusedRNNCell(self._num_hidden, self._num_layers, self._mode, self._bidirectional,
                            forget_bias=self._forget_bias, prefix="")
        args = cell.unpack_weights({"parameters": arr})
        global_init = getattr(desc, "global_init", None)
        for name, part in args.items():
            if self._mode == "lstm" and name.endswith("_f_bias"):
                part[:] = self._forget_bias
                continue
            init = self._init if self._init is not None else global_init
            if init is None:
                raise initializer.InitializerError(
                    f"FusedRNN: no initializer for '{name}' (give init= or initialize through a global initializer)")
            init(InitDesc(name, global_init=global_init), part)
        arr[:] = cell.pack_weights(args)["parameters"]

