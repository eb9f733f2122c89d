"""The single-process store ('local' and 'device'): values pushed from several devices are summed,
then either stored or handed to the updater; pulls copy the stored value to every output.

Every data movement is an engine op that reads the source arrays' vars and writes the
destination's var, so pushes of finished gradients run while the rest of backward still runs.

Sparse values (MXNet's row_sparse weights and gradients): a key initialized from a sparse array
keeps its value in a dense buffer; pushed sparse values are summed sparsely (the union of their
rows) and handed to the updater as they are (so SGD/Adam update lazily, only those rows), or kept
as the key's value; `row_sparse_pull` hands back the requested rows, `pull(ignore_sparse=False)`
every row.  Sparse work runs on the host at call time, like ember's other sparse kernels."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from .. import engine
from ..base import FormatError
from ..context import Context, cpu
from . import arrays, native_pull
from .base import KVStoreBase, SingleProcess
from .errors import KVStoreError, KVStoreShapeError
from .keys import Key, check_one_kind, group


@dataclass
class Entry:
    """One key's stored value (and, when an updater runs, the buffer the pushes are merged into)."""

    key: Key
    data: Any
    var: Any
    ctx: Context
    nd_type: type
    merge_data: Any = None
    merge_var: Any = None
    stype: str = "default"     # the storage type the key was initialized with
    sparse_value: Any = None   # the last push's sum, when it was sparse and no updater took it

    def __post_init__(self):
        # Fixed at init (the distributed store may re-home `data`, never reshape it); read on
        # every push and pull, so kept rather than recomputed.
        self.shape: Tuple[int, ...] = tuple(self.data.shape)
        self.dtype: np.dtype = np.dtype(self.data.dtype)

    def stored_nd(self):
        """The stored value as an NDArray sharing the store's buffer and var."""
        return self.nd_type._wrap(self.data, self.var, self.ctx)

    def merged_nd(self):
        """The merge buffer as an NDArray (allocated on first use)."""
        if self.merge_data is None:
            self.merge_data = arrays.empty_on(self.ctx, self.shape, self.dtype)
            self.merge_var = engine.Var(name=f"kvstore_merge_{self.key}")
        return self.nd_type._wrap(self.merge_data, self.merge_var, self.ctx)


def _is_sparse(arr) -> bool:
    return getattr(arr, "stype", "default") != "default"


def _sparse_sum(vals, ctx: Context):
    """The sum of pushed values, at least one sparse, on the store's device: sparse (the union of
    the stored rows) when all share one format, else dense (MXNet's storage fallback)."""
    total = vals[0].as_in_context(ctx)
    for v in vals[1:]:
        total = total + v.as_in_context(ctx)
    return total if len(vals) > 1 else total.copy()


def _unique_vars(arrs) -> list:
    seen, out = set(), []
    for a in arrs:
        v = a._chunk.var  # not a.var: mx.np.ndarray's var() is numpy's variance
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


class KVStore(SingleProcess, KVStoreBase):
    """MXNet's KVStore API over the engine (types 'local' and 'device')."""

    def __init__(self, kv_type: str = "local"):
        self._type = kv_type
        self._store: dict = {}
        self._updater: Optional[Callable] = None
        self._optimizer = None

    # ----------------------------------------------------------------- properties
    @property
    def type(self) -> str:
        """The store type given to `create` ('local', 'device', 'dist_sync', ...)."""
        return self._type

    def is_capable(self, capability: str) -> bool:
        """Whether this store supports `capability` (MXNet 1.9: 'optimizer' = updates on the store)."""
        if capability != self.OPTIMIZER:
            raise KVStoreError(f"unknown kvstore capability {capability!r}; expected 'optimizer'")
        return True

    # ----------------------------------------------------------------- checks
    def _entry(self, key: Key) -> Entry:
        entry = self._store.get(key)
        if entry is None:
            raise KVStoreError(f"key {key!r} has not been initialized: call kv.init({key!r}, value) first")
        return entry

    def _check_like(self, entry: Entry, arr, what: str, check_dtype: bool = True) -> None:
        shape = tuple(arr.shape)
        if shape != entry.shape:
            raise KVStoreShapeError(f"{what} for key {entry.key!r} has shape {shape}, "
                                    f"but the key was initialized with shape {entry.shape}")
        if check_dtype and np.dtype(arr.dtype) != entry.dtype:
            raise KVStoreShapeError(f"{what} for key {entry.key!r} has dtype {np.dtype(arr.dtype)}, "
                                    f"but the key was initialized with dtype {entry.dtype}")

    def _store_context(self, value) -> Context:
        # 'local' keeps the store in host memory; 'device' keeps it where the values live.
        return arrays.context_of(value) if "device" in self._type else cpu()

    # ----------------------------------------------------------------- init
    def init(self, key, value) -> None:
        """Initialise key(s) with value(s); each key exactly once."""
        pairs = group(key, value, "values")
        check_one_kind([k for k, _ in pairs], next(iter(self._store), None))
        for k, vals in pairs:
            if k in self._store:
                raise KVStoreError(f"key {k!r} is already initialized (double init)")
            if len(vals) != 1:
                raise KVStoreError(f"init of key {k!r} got {len(vals)} values; give exactly one")
        entries = []
        for k, vals in pairs:
            src, stype = vals[0], getattr(vals[0], "stype", "default")
            if stype != "default":
                from ..imperative.sparse_ops import densify
                src = densify(src)  # the store holds every row of a sparse value
            ctx = self._store_context(src)
            entry = Entry(k, arrays.empty_on(ctx, tuple(src.shape), np.dtype(src.dtype)),
                          engine.Var(name=f"kvstore_{k}"), ctx, type(src), stype=stype)
            self._store[k] = entry
            entries.append((entry, src))
        self._init_entries(entries)

    def _init_entries(self, entries: List[Tuple[Entry, Any]]) -> None:
        for entry, src in entries:
            def copy(dst=entry.data, src=src):  # arrays are bound at issue time: dist stores rebind them
                arrays.copy_into(dst, src._data)
            engine.push(copy, read=[src._chunk.var], write=[entry.var], device=entry.ctx,
                        name=f"kvstore_init[{entry.key!r}]")

    # ----------------------------------------------------------------- push / pull
    def _check_push(self, key, value):
        return self._checked(key, value, "values", "pushed value", True)

    def _checked(self, key, values, what: str, each: str, check_dtype: bool):
        """[(entry, arrays)] of a push or pull, each array checked against its key's shape (and dtype)."""
        checked = []
        for k, arrs in group(key, values, what):
            entry = self._entry(k)
            for a in arrs:
                self._check_like(entry, a, each, check_dtype)
            checked.append((entry, arrs))
        return checked

    def push(self, key, value, priority: int = 0) -> None:
        """Push value(s) into key(s): several values for one key (one per device) are summed,
        then given to the updater if one is set, else stored.  Sparse values are summed sparsely
        and reach the updater as a sparse gradient (see the module docstring)."""
        checked = self._check_push(key, value)
        dense = [(entry, vals) for entry, vals in checked if not any(_is_sparse(v) for v in vals)]
        for entry, vals in checked:
            entry.sparse_value = None
            if any(_is_sparse(v) for v in vals):
                self._push_sparse(entry, vals)
        if dense:
            self._push_entries(dense, priority)

    def _push_sparse(self, entry: Entry, vals) -> None:
        from ..imperative.sparse_ops import assign
        merged = _sparse_sum(vals, entry.ctx)
        if self._updater is not None:
            self._updater(entry.key, merged, entry.stored_nd())
            return
        assign(entry.stored_nd(), merged)  # dense buffer: an engine-ordered copy
        if _is_sparse(merged):
            entry.sparse_value = merged

    def _push_entries(self, checked, priority: int) -> None:
        for entry, vals in checked:
            target_data, target_var = entry.data, entry.var
            if self._updater is not None:
                merged = entry.merged_nd()
                target_data, target_var = entry.merge_data, entry.merge_var

            def aggregate(vals=vals, dst=target_data):
                arrays.sum_into(dst, [v._data for v in vals])
            engine.push(aggregate, read=_unique_vars(vals), write=[target_var], priority=priority,
                        device=entry.ctx, name=f"kvstore_push[{entry.key!r}]")
            if self._updater is not None:
                self._updater(entry.key, merged, entry.stored_nd())

    def pull(self, key, out=None, priority: int = 0, ignore_sparse: bool = True) -> None:
        """Copy the value(s) of key(s) into `out` (an NDArray or list per key).  Sparse outputs
        are skipped when `ignore_sparse` (MXNet's default), else receive every row."""
        checked = self._check_pull(key, out)
        dense = []
        for entry, outs in checked:
            plain = [o for o in outs if not _is_sparse(o)]
            if plain:
                dense.append((entry, plain))
            if not ignore_sparse:
                for o in outs:
                    if _is_sparse(o):
                        self._assign_sparse(o, self._sparse_source(entry))
        if dense:
            self._pull_entries(dense, priority)

    def _sparse_source(self, entry: Entry):
        """The key's value to hand to sparse outputs: the last sparse push's sum, else the buffer."""
        return entry.sparse_value if entry.sparse_value is not None else entry.stored_nd()

    @staticmethod
    def _assign_sparse(out, value) -> None:
        from ..imperative.sparse_ops import assign
        assign(out, value)

    def _check_pull(self, key, out):
        if out is None:
            raise KVStoreError("pull needs `out`: the NDArray(s) to copy the stored value into")
        return self._checked(key, out, "outputs", "pull output", False)

    def _pull_entries(self, checked, priority: int) -> None:
        for entry, outs in checked:
            name = f"kvstore_pull[{entry.key!r}]"
            outs = native_pull.pull(entry.data, entry.var, outs, priority, name)  # plain host outputs
            if not outs:
                continue

            def copy_out(src=entry.data, outs=outs):
                for o in outs:
                    arrays.copy_into(o._data, src)
            engine.push(copy_out, read=[entry.var], write=_unique_vars(outs), priority=priority,
                        device=entry.ctx, name=name)

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        """push(key, value) then pull(key, out); `out=None` pulls back into `value`."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        """init(key, value) then pull(key, out): every worker starts from worker 0's value."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority: int = 0, row_ids=None) -> None:
        """Pull only rows `row_ids` of key(s) into row_sparse `out` (MXNet's row_sparse_pull).

        `row_ids` is one NDArray per output (or one for all outputs of a key, the result then
        copied to the others); ids need not be unique nor sorted: each output stores the unique
        ids, ascending, with the store's values (zeros for rows the value lacks)."""
        from ..imperative.ndarray import NDArray
        from ..imperative.sparse_ndarray import make_row_sparse
        if out is None:
            raise KVStoreError("row_sparse_pull needs `out`: the RowSparseNDArray(s) to pull into")
        if row_ids is None:
            raise KVStoreError("row_sparse_pull needs `row_ids`: the rows to pull")
        if isinstance(row_ids, NDArray):
            row_ids = [row_ids]
        if not isinstance(row_ids, list):
            raise KVStoreError("row_ids should be NDArray or list of NDArray")
        single_rowid = len(row_ids) == 1 and isinstance(out, list)
        first_out = [out[0]] if single_rowid else out
        outs = self._check_pull(key, first_out)
        ids = group(key, row_ids, "row_ids")
        flat_outs = [(entry, o) for entry, os in outs for o in os]
        flat_ids = [r for _, rs in ids for r in rs]
        if len(flat_ids) != len(flat_outs):
            raise KVStoreError(f"the number of row_ids ({len(flat_ids)}) doesn't match the number of values "
                               f"({len(flat_outs)})")
        for (entry, o), rid in zip(flat_outs, flat_ids):
            if getattr(o, "stype", "default") != "row_sparse":
                raise KVStoreError(f"row_sparse_pull of key {entry.key!r} needs row_sparse outputs, got "
                                   f"storage type {getattr(o, 'stype', 'default')}")
            rows = np.unique(rid.asnumpy().astype(np.int64).ravel())
            if rows.size and (rows[0] < 0 or rows[-1] >= entry.shape[0]):
                raise KVStoreError(f"row_sparse_pull of key {entry.key!r}: row ids must be in "
                                   f"[0, {entry.shape[0]}), got {rows.tolist()}")
            values = self._sparse_source(entry).asnumpy()[rows]
            self._assign_sparse(o, make_row_sparse(values, rows, entry.shape, o.context, dtype=o.dtype))
        if single_rowid:
            for other in out[1:]:
                out[0].copyto(other)

    def set_gradient_compression(self, compression_params) -> None:
        """Not supported: gradients are always sent uncompressed."""
        raise KVStoreError("gradient compression is not supported by ember's kvstore")

    # ----------------------------------------------------------------- updates
    def set_optimizer(self, optimizer) -> None:
        """Run `optimizer` on the store: each push then applies one update to the stored weight."""
        from .. import optimizer as opt_module  # the optimizer package imports NDArray ops
        self._optimizer = optimizer
        self._set_updater(opt_module.get_updater(optimizer))

    def _set_updater(self, updater: Callable) -> None:
        """Set `updater(key, merged_grad, stored_weight)`, called for every pushed key."""
        if updater is not None and not callable(updater):
            raise KVStoreError(f"updater must be callable, got {type(updater).__name__}")
        self._updater = updater

    set_updater = _set_updater

    def _updater_for_states(self):
        if self._updater is None or not hasattr(self._updater, "get_states"):
            raise KVStoreError("no optimizer states: call set_optimizer(...) on this kvstore first")
        return self._updater

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the updater's optimizer states (and the optimizer itself if asked) to `fname`."""
        updater = self._updater_for_states()
        engine.wait_all()
        with open(fname, "wb") as f:
            f.write(updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str) -> None:
        """Read optimizer states written by save_optimizer_states."""
        updater = self._updater_for_states()
        with open(fname, "rb") as f:
            data = f.read()
        try:
            updater.set_states(data)
        except FormatError as e:
            raise FormatError(f"{fname!r} does not hold optimizer states: {e}") from None

    # ----------------------------------------------------------------- sync
    def barrier(self) -> None:
        """Wait until every worker reaches the barrier (nothing to wait for in one process)."""

    _barrier = barrier

    def _send_command_to_servers(self, head: int, body: str) -> None:
        """Servers exist only for dist_async stores; a single-process store has none."""

    def close(self) -> None:
        """Release communication resources (nothing to release in one process)."""

    def __repr__(self):
        return f"<KVStore type={self._type!r} rank={self.rank} num_workers={self.num_workers} keys={len(self._store)}>"
