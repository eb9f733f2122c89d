"""Cells that change another cell or its inputs: DropoutCell, ZoneoutCell, ResidualCell."""
from __future__ import annotations

from numbers import Number
from typing import List, Optional

from .. import symbol
from ..symbolic.symbol import Symbol
from .base import BaseRNNCell, RNNParams, normalize_sequence


class DropoutCell(BaseRNNCell):
    """Dropout (probability `dropout`) on the inputs; no state, no weights."""

    def __init__(self, dropout: float, prefix: str = "dropout_", params: Optional[RNNParams] = None):
        super().__init__(prefix, params)
        if not isinstance(dropout, Number) or isinstance(dropout, bool):
            raise AssertionError(f"dropout probability must be a number, got {dropout!r}")
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def __call__(self, inputs: Symbol, states: List[Symbol]):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None):
        """A merged input gets one Dropout over the whole sequence; a list gets one per step."""
        self.reset()
        inputs, _ = normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs)


class ModifierCell(BaseRNNCell):
    """Base of cells wrapping `base_cell`; the base cell must then be used only through the wrapper."""

    def __init__(self, base_cell: BaseRNNCell):
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self):
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self):
        return self.base_cell.state_info

    def begin_state(self, init_sym=symbol.zeros, **kwargs) -> List[Symbol]:
        """The base cell's begin states (`func=` is accepted for `init_sym`, as other cells name it)."""
        self._check_unmodified()
        if "func" in kwargs:
            init_sym = kwargs.pop("func")
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(init_sym, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args):
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args):
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs, states):
        raise NotImplementedError(f"{type(self).__name__} must define __call__")


class ZoneoutCell(ModifierCell):
    """Zoneout: while training, each output (state) unit keeps its previous value with
    probability `zoneout_outputs` (`zoneout_states`) instead of taking the new one."""

    def __init__(self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.0, zoneout_states: float = 0.0):
        from .fused import FusedRNNCell
        from .stacks import BidirectionalCell
        if isinstance(base_cell, FusedRNNCell):
            raise AssertionError("FusedRNNCell doesn't support zoneout. Please unfuse first.")
        if isinstance(base_cell, BidirectionalCell):
            raise AssertionError("BidirectionalCell doesn't support zoneout since it doesn't support step. "
                                 "Please add ZoneoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states  # prev_output is set by reset(), which the constructor calls

    def reset(self) -> None:
        super().reset()
        self.prev_output = None

    def __call__(self, inputs: Symbol, states: List[Symbol]):
        p_out, p_states = self.zoneout_outputs, self.zoneout_states
        new_out, new_states = self.base_cell(inputs, states)

        def keep_new(p, like):  # 1 where the new value is taken (Dropout of ones: 0 w.p. p in training)
            return symbol.Dropout(symbol.ones_like(like), p=p)

        prev = self.prev_output if self.prev_output is not None else symbol.zeros((0, 0))
        output = symbol.where(keep_new(p_out, new_out), new_out, prev) if p_out != 0.0 else new_out
        if p_states != 0.0:
            new_states = [symbol.where(keep_new(p_states, new), new, old) for new, old in zip(new_states, states)]
        self.prev_output = output
        return output, new_states


class ResidualCell(ModifierCell):
    """The base cell's output plus its input (Wu et al. 2016)."""

    def __call__(self, inputs: Symbol, states: List[Symbol]):
        output, states = self.base_cell(inputs, states)
        return symbol.elemwise_add(output, inputs, name=f"{output.name}_plus_residual"), states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state,
                                                    layout=layout, merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, Symbol)
        inputs, _ = normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            return symbol.elemwise_add(outputs, inputs, name=f"{outputs.name}_plus_residual"), states
        return [symbol.elemwise_add(o, x, name=f"{o.name}_plus_residual") for o, x in zip(outputs, inputs)], states
