"""`mx.np._internal`: MXNet's internal numpy operators that user code calls directly.

`boolean_mask_assign_scalar` / `boolean_mask_assign_tensor` are what `a[..., mask, ...] = value` runs in
MXNet 1.9.1 (`_npi_boolean_mask_assign_*`); here they are that assignment, through ndarray's own
boolean-key setitem, so both spellings share one mechanism.
"""
from __future__ import annotations

from typing import Optional

from ..base import MXNetError
from .multiarray import ndarray

__all__ = ["boolean_mask_assign_scalar", "boolean_mask_assign_tensor"]


def _assign(data: ndarray, mask: ndarray, value, start_axis: int, out: Optional[ndarray], op: str) -> ndarray:
    if not isinstance(data, ndarray) or not isinstance(mask, ndarray):
        raise TypeError(f"{op}: data and mask must be mx.np arrays, got {type(data).__name__} and "
                        f"{type(mask).__name__}")
    if mask.dtype != bool:
        raise MXNetError(f"{op}: the mask must be boolean, got {mask.dtype}")
    if not 0 <= start_axis <= data.ndim - mask.ndim:
        raise MXNetError(f"{op}: start_axis {start_axis} does not place a {mask.ndim}-d mask in a "
                         f"{data.ndim}-d array")
    if tuple(data.shape[start_axis:start_axis + mask.ndim]) != tuple(mask.shape):
        raise MXNetError(f"{op}: mask shape {tuple(mask.shape)} does not match data shape "
                         f"{tuple(data.shape)} from axis {start_axis}")
    target = data if out is None or out is data else out
    if target is not data:
        target[...] = data
    if data.ndim == 0:  # a 0-d mask selects the whole array or nothing
        if bool(mask):
            target[...] = value
        return target
    target[(slice(None),) * start_axis + (mask,)] = value
    return target


def boolean_mask_assign_scalar(data: ndarray, mask: ndarray, value: float, start_axis: int = 0,
                               out: Optional[ndarray] = None) -> ndarray:
    """`data[..., mask, ...] = value` with `mask` on the axes from `start_axis`; into `out` (MXNet's
    callers pass `out=data`: in place)."""
    return _assign(data, mask, float(value), start_axis, out, "boolean_mask_assign_scalar")


def boolean_mask_assign_tensor(data: ndarray, mask: ndarray, value: ndarray, start_axis: int = 0,
                               out: Optional[ndarray] = None) -> ndarray:
    """`data[..., mask, ...] = value` for an array `value` of the selected shape (or broadcastable to it)."""
    return _assign(data, mask, value, start_axis, out, "boolean_mask_assign_tensor")
