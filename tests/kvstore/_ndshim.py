"""A minimal stand-in for `mx.nd`, used only while ember's NDArray is not importable.

It follows the documented NDArray internals contract (`_data`, `var`, `context`, `_wrap`), which
is all the kvstore relies on, so the store's tests run before and after NDArray lands."""
from __future__ import annotations

import numpy as np

from ember import engine
from ember.context import cpu


class NDArray:
    def __init__(self, data, var=None, ctx=None):
        self._data = data
        self.var = var if var is not None else engine.Var()
        self.context = ctx or cpu()

    @classmethod
    def _wrap(cls, data, var, ctx):
        return cls(data, var, ctx)

    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)

    def asnumpy(self):
        engine.wait(self.var)
        return np.array(self._data)


def array(x, ctx=None, dtype=np.float32):
    return NDArray(np.array(x, dtype=dtype), ctx=ctx)


def zeros(shape, ctx=None, dtype=np.float32):
    return NDArray(np.zeros(shape, dtype=dtype), ctx=ctx)


def waitall():
    engine.wait_all()
