"""`mx.mon` / `mx.monitor`: statistics of an executor's inputs, outputs, weights and gradients.

A Monitor installs a callback on executors (`Executor.set_monitor_callback`, or
`Module.install_monitor`).  Every `interval` batches, `tic()` starts collecting: the callback
records `stat_func(array)` for every operator output (and input, with monitor_all) whose name
matches `pattern`; `toc()` adds the arguments and aux states and returns
[(step, name, formatted statistic)].  The statistics are NDArrays computed by engine ops, so
collecting does not stall the graph; `toc()` reads them.
"""
from __future__ import annotations

import logging
import math
import re
from typing import Callable, List, Optional, Tuple

from . import ndarray as nd
from .imperative.ndarray import NDArray


def _default_stat(x: NDArray) -> NDArray:
    """|x|_2 / sqrt(size): the root mean square, as MXNet's default."""
    return nd.norm(x) / math.sqrt(max(x.size, 1))


class Monitor:
    """Collect statistics of tensors every `interval` batches (MXNet's mx.mon.Monitor).

    stat_func: NDArray -> NDArray (or a list of NDArrays); pattern: regular expression the
    tensor names must match (re.match); sort: order the results by name; monitor_all: also
    monitor operator inputs.
    """

    def __init__(self, interval: int, stat_func: Optional[Callable] = None, pattern: str = ".*",
                 sort: bool = False, monitor_all: bool = False):
        if int(interval) < 1:
            raise ValueError(f"Monitor: interval must be a positive number of batches, got {interval}")
        self.stat_func = stat_func if stat_func is not None else _default_stat
        self.interval = int(interval)
        self.activated = False
        self.queue: List[Tuple[int, str, object]] = []
        self.step = 0
        self.exes: list = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

        def stat_helper(name, array):
            """The executor callback: record the statistic while collecting."""
            name = name.decode() if isinstance(name, bytes) else str(name)
            if not self.activated or not self.re_prog.match(name):
                return
            self.queue.append((self.step, name, self.stat_func(array)))
        self.stat_helper = stat_helper

    def install(self, exe) -> None:
        """Install the callback on an executor (several executors may share one monitor)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self) -> None:
        """Start collecting for this batch when it is a multiple of `interval`; call before forward."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self) -> List[Tuple[int, str, str]]:
        """Stop collecting and return [(step, name, statistic as text)], arguments and aux states included."""
        if not self.activated:
            return []
        for exe in self.exes:
            for names, arrays in ((exe._symbol.list_arguments(), exe.arg_arrays),
                                  (exe._symbol.list_auxiliary_states(), exe.aux_arrays)):
                for name, array in zip(names, arrays):
                    if self.re_prog.match(name):
                        self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda item: item[1])
        res = []
        for step, name, values in self.queue:
            if isinstance(values, NDArray):
                values = [values]
            if not isinstance(values, (list, tuple)):
                raise TypeError(f"Monitor: stat_func must return an NDArray or a list of them, "
                                f"got {type(values).__name__} for '{name}'")
            text = ""
            for v in values:
                if not isinstance(v, NDArray):
                    raise TypeError(f"Monitor: stat_func returned a {type(v).__name__} for '{name}', "
                                    "not an NDArray")
                text += (str(v.asscalar()) if v.shape == (1,) else str(v.asnumpy())) + "\t"
            res.append((step, name, text))
        self.queue = []
        return res

    def toc_print(self) -> None:
        """toc(), logging each result."""
        for step, name, text in self.toc():
            logging.info("Batch: {:7d} {:30s} {:s}".format(step, name, text))
