"""Checkpoints of models built from RNN cells: weights are saved unpacked (per gate), loaded packed."""
from __future__ import annotations

import warnings
from typing import Callable, Dict, Optional, Sequence, Tuple, Union

from ..model import load_checkpoint, save_checkpoint
from .base import BaseRNNCell

Cells = Union[BaseRNNCell, Sequence[BaseRNNCell]]


def _as_list(cells: Cells):
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def rnn_unroll(cell: BaseRNNCell, length: int, inputs=None, begin_state=None, input_prefix: str = "",
               layout: str = "NTC"):
    """Deprecated: call cell.unroll(length, inputs, begin_state, layout) instead."""
    warnings.warn("rnn_unroll is deprecated. Please call cell.unroll directly.")
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)


def save_rnn_checkpoint(cells: Cells, prefix: str, epoch: int, symbol, arg_params: Dict,
                        aux_params: Optional[Dict]) -> None:
    """`mx.model.save_checkpoint` with each cell's weights unpacked first
    (`prefix-symbol.json`, `prefix-%04d.params`)."""
    for cell in _as_list(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells: Cells, prefix: str, epoch: int) -> Tuple[object, Dict, Dict]:
    """`mx.model.load_checkpoint` with each cell's weights packed again: (symbol, arg_params, aux_params)."""
    sym, arg, aux = load_checkpoint(prefix, epoch)
    for cell in _as_list(cells):
        arg = cell.pack_weights(arg)
    return sym, arg, aux


def do_rnn_checkpoint(cells: Cells, prefix: str, period: int = 1) -> Callable:
    """An epoch-end callback for Module.fit saving an RNN checkpoint every `period` epochs."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
