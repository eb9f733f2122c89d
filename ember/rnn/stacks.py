"""Cells made of cells: SequentialRNNCell (layers stacked) and BidirectionalCell."""
from __future__ import annotations

from typing import List, Optional, Tuple

from .. import symbol
from ..symbolic.symbol import Symbol
from .base import BaseRNNCell, RNNParams, normalize_sequence


def _adopt_params(parent: BaseRNNCell, children, overriding: bool, what: str) -> None:
    # With params given to the container, the children use its variables; either way the
    # container's params list every child's variables.
    for cell in children:
        if overriding:
            if not cell._own_params:
                raise AssertionError(f"Either specify params for {what} or child cells, not both.")
            cell.params._params.update(parent.params._params)
        parent.params._params.update(cell.params._params)


class _CellGroup(BaseRNNCell):
    """What SequentialRNNCell and BidirectionalCell share: states and weights are those of the cells
    in `self._cells`, in order."""

    @property
    def state_info(self):
        return [info for cell in self._cells for info in cell.state_info]

    def begin_state(self, **kwargs) -> List[Symbol]:
        self._check_unmodified()
        return [s for cell in self._cells for s in cell.begin_state(**kwargs)]

    def unpack_weights(self, args):
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args


class SequentialRNNCell(_CellGroup):
    """Cells applied one after the other: each one's output is the next one's input."""

    def __init__(self, params: Optional[RNNParams] = None):
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells: List[BaseRNNCell] = []

    def add(self, cell: BaseRNNCell) -> None:
        """Append `cell` to the stack."""
        self._cells.append(cell)
        _adopt_params(self, [cell], self._override_cell_params, "SequentialRNNCell")

    def __call__(self, inputs: Symbol, states: List[Symbol]) -> Tuple[Symbol, List[Symbol]]:
        self._counter += 1
        next_states: List[Symbol] = []
        p = 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise AssertionError("a SequentialRNNCell holding a BidirectionalCell cannot be stepped; "
                                     "use unroll")
            n = len(cell.state_info)
            inputs, new = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(new)
        return inputs, next_states

    def unroll(self, length: int, inputs, begin_state: Optional[List[Symbol]] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None):
        """Unroll each cell in turn over the whole sequence (the last one merges as asked)."""
        self.reset()
        if begin_state is None:
            begin_state = self.begin_state()
        p = 0
        next_states: List[Symbol] = []
        last = len(self._cells) - 1
        for i, cell in enumerate(self._cells):
            n = len(cell.state_info)
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[p:p + n],
                                         layout=layout, merge_outputs=merge_outputs if i == last else None)
            p += n
            next_states.extend(states)
        return inputs, next_states


class BidirectionalCell(_CellGroup):
    """`l_cell` reads the sequence forwards, `r_cell` backwards; their outputs are concatenated
    per step ('<output_prefix>t<i>') or along the features of the merged output ('<output_prefix>out')."""

    def __init__(self, l_cell: BaseRNNCell, r_cell: BaseRNNCell, params: Optional[RNNParams] = None,
                 output_prefix: str = "bi_"):
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        _adopt_params(self, [l_cell, r_cell], self._override_cell_params, "BidirectionalCell")
        self._cells = [l_cell, r_cell]

    def __call__(self, inputs, states):
        raise NotImplementedError("BidirectionalCell cannot be stepped. Please use unroll")

    def unroll(self, length: int, inputs, begin_state: Optional[List[Symbol]] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None):
        self.reset()
        inputs, axis = normalize_sequence(length, inputs, layout, False)
        if begin_state is None:
            begin_state = self.begin_state()
        l_cell, r_cell = self._cells
        n_l = len(l_cell.state_info)
        l_out, l_states = l_cell.unroll(length, inputs=inputs, begin_state=begin_state[:n_l],
                                        layout=layout, merge_outputs=merge_outputs)
        r_out, r_states = r_cell.unroll(length, inputs=list(reversed(inputs)),
                                        begin_state=begin_state[n_l:], layout=layout,
                                        merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = isinstance(l_out, Symbol) and isinstance(r_out, Symbol)
            if not merge_outputs:
                if isinstance(l_out, Symbol):
                    l_out = list(symbol.SliceChannel(l_out, axis=axis, num_outputs=length, squeeze_axis=1))
                if isinstance(r_out, Symbol):
                    r_out = list(symbol.SliceChannel(r_out, axis=axis, num_outputs=length, squeeze_axis=1))
        if merge_outputs:
            outputs = symbol.Concat(l_out, symbol.reverse(r_out, axis=axis), dim=2,
                                    name=f"{self._output_prefix}out")
        else:
            r_out = list(reversed(r_out))
            outputs = [symbol.Concat(lo, ro, dim=1, name=f"{self._output_prefix}t{i}")
                       for i, (lo, ro) in enumerate(zip(l_out, r_out))]
        return outputs, [l_states, r_states]
