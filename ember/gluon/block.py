"""SymbolBlock: a callable block that runs a loaded symbol on NDArrays (inference)."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, Union

from .. import symbol as sym_mod
from ..base import EmberError
from ..context import Context
from ..imperative.ndarray import NDArray
from ..model import load_symbol
from .parameter import Parameter, ParameterDict


class SymbolBlock:
    """Wrap `outputs` (a Symbol) with its `inputs` (Symbols or names); the other arguments and
    auxiliary states become parameters.  Calling the block binds an executor per input shape
    (cached) and returns the outputs as NDArrays (one, or a list for several outputs).
    """

    def __init__(self, outputs, inputs, params: Optional[ParameterDict] = None):
        if isinstance(outputs, (list, tuple)):
            outputs = sym_mod.Group(list(outputs)) if len(outputs) > 1 else outputs[0]
        self._symbol = outputs
        if not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        self._input_names: List[str] = [i if isinstance(i, str) else i.name for i in inputs]
        args = outputs.list_arguments()
        missing = [n for n in self._input_names if n not in args]
        if missing:
            raise EmberError(f"SymbolBlock: inputs {missing} are not arguments of the symbol ({args})")
        self._params = ParameterDict()
        for name in args:
            if name not in self._input_names:
                self._params[name] = (params or {}).get(name) or Parameter(name)
        for name in outputs.list_auxiliary_states():
            self._params[name] = (params or {}).get(name) or Parameter(name)
        self._aux_names = set(outputs.list_auxiliary_states())
        self._executors: Dict[Tuple, object] = {}

    @staticmethod
    def imports(symbol_file: str, input_names: Union[str, Sequence[str]], param_file: Optional[str] = None,
                ctx: Optional[Context] = None, allow_missing: bool = False,
                ignore_extra: bool = False) -> "SymbolBlock":
        """A SymbolBlock from an exported `*-symbol.json` and (optionally) its `*.params`."""
        symbol = load_symbol(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        block = SymbolBlock(symbol, list(input_names))
        if param_file is not None:
            block.collect_params().load(param_file, ctx, allow_missing=allow_missing, ignore_extra=ignore_extra)
        return block

    def collect_params(self) -> ParameterDict:
        """The block's parameters (arguments other than the inputs, and auxiliary states)."""
        return self._params

    def load_parameters(self, filename: str, ctx: Optional[Context] = None, allow_missing: bool = False,
                        ignore_extra: bool = False) -> None:
        """Set the parameters from an mx.nd.save file."""
        self._params.load(filename, ctx, allow_missing=allow_missing, ignore_extra=ignore_extra)

    def _executor(self, inputs: Sequence[NDArray]):
        ctx = inputs[0].context
        key = (str(ctx),) + tuple((tuple(x.shape), str(x.dtype)) for x in inputs)
        ex = self._executors.get(key)
        if ex is None:
            args = {n: x for n, x in zip(self._input_names, inputs)}
            aux = {}
            for name, param in self._params.items():
                (aux if name in self._aux_names else args)[name] = param.data(ctx)
            # copy the inputs: later calls write new inputs into the bound arrays
            args.update({n: x.copy() for n, x in zip(self._input_names, inputs)})
            ex = self._symbol.bind(ctx, args, aux_states=aux, grad_req="null")
            self._executors[key] = ex
        return ex

    def forward(self, *inputs: NDArray):
        """Run the symbol on the inputs; returns an NDArray or a list of them."""
        if len(inputs) != len(self._input_names):
            raise TypeError(f"SymbolBlock expects {len(self._input_names)} inputs ({self._input_names}), "
                            f"got {len(inputs)}")
        for name, x in zip(self._input_names, inputs):
            if not isinstance(x, NDArray):
                raise TypeError(f"SymbolBlock input '{name}' must be an NDArray, got {type(x).__name__}")
        ex = self._executor(inputs)
        outs = ex.forward(is_train=False, **dict(zip(self._input_names, inputs)))
        # the executor reuses its output arrays on the next call: hand out copies
        outs = [o.copy() for o in outs]
        return outs[0] if len(outs) == 1 else outs

    __call__ = forward

    def hybridize(self, *args, **kwargs) -> None:
        """No-op: a SymbolBlock always runs its graph."""

    def __repr__(self) -> str:
        return f"SymbolBlock(inputs={self._input_names}, outputs={self._symbol.list_outputs()})"
