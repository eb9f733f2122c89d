"""`mx.model`: MXNet checkpoint files (prefix-symbol.json + prefix-%04d.params).

The .params file is an NDArray dict whose keys are 'arg:<name>' for arguments
and 'aux:<name>' for auxiliary states (BatchNorm statistics), exactly as
MXNet's `save_checkpoint` writes it, so files move between ember and MXNet.
"""
from __future__ import annotations

import logging
from collections import namedtuple
from typing import Dict, Optional, Tuple

from . import ndarray as nd
from .base import FormatError
from .context import cpu

BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def _params_file(prefix: str, epoch: int) -> str:
    return "%s-%04d.params" % (prefix, epoch)


def save_params(prefix: str, epoch: int, arg_params: Dict, aux_params: Optional[Dict] = None) -> str:
    """Write `prefix-%04d.params` with arg:/aux: keys; returns the file name."""
    data = {"arg:" + k: v.as_in_context(cpu()) for k, v in arg_params.items()}
    data.update({"aux:" + k: v.as_in_context(cpu()) for k, v in (aux_params or {}).items()})
    fname = _params_file(prefix, epoch)
    nd.save(fname, data)
    return fname


def save_checkpoint(prefix: str, epoch: int, symbol, arg_params: Dict, aux_params: Optional[Dict] = None,
                    remove_amp_cast: bool = True) -> None:
    """Save `prefix-symbol.json` (when symbol is given) and `prefix-%04d.params`."""
    if symbol is not None:
        symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
    fname = save_params(prefix, epoch, arg_params, aux_params)
    logging.info('Saved checkpoint to "%s"', fname)


def split_params(saved: Dict, fname: str = "<params>") -> Tuple[Dict, Dict]:
    """Split a loaded arg:/aux: dict into (arg_params, aux_params); FormatError for other keys."""
    if not isinstance(saved, dict):
        raise FormatError(f"{fname}: expected named arrays (arg:/aux: keys), found an unnamed list")
    arg_params, aux_params = {}, {}
    for key, value in saved.items():
        kind, sep, name = key.partition(":")
        if not sep or kind not in ("arg", "aux") or not name:
            raise FormatError(f"{fname}: key '{key}' is not of the form 'arg:<name>' or 'aux:<name>'")
        if value is None:
            raise FormatError(f"{fname}: parameter '{name}' holds no array")
        (arg_params if kind == "arg" else aux_params)[name] = value
    return arg_params, aux_params


def load_params(prefix: str, epoch: int) -> Tuple[Dict, Dict]:
    """(arg_params, aux_params) from `prefix-%04d.params`."""
    fname = _params_file(prefix, epoch)
    return split_params(nd.load(fname), fname)


def load_symbol(fname: str):
    """mx.sym.load, with FormatError (not UnicodeDecodeError) for a file that is not text."""
    from . import symbol as sym
    try:
        return sym.load(fname)
    except UnicodeDecodeError as e:
        raise FormatError(f"{fname}: not a symbol JSON file (not UTF-8 text: {e.reason} at byte {e.start})") from None


def load_checkpoint(prefix: str, epoch: int):
    """(symbol, arg_params, aux_params) from `prefix-symbol.json` and `prefix-%04d.params`."""
    symbol = load_symbol("%s-symbol.json" % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
