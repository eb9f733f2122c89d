"""Executors: a compiled graph bound to arrays, run as engine ops (`bind`, `simple_bind`).

Every planned storage block is cut into segments at the tensor boundaries of the plan and
each segment is an engine Var, so two nodes that touch the same bytes are ordered by
the engine while nodes on disjoint bytes (independent branches) may run in parallel.
Argument, gradient and aux arrays are ordinary NDArrays: nodes read/write their vars,
so imperative updates of executor weights are ordered with forward/backward for free.
"""
from __future__ import annotations

import bisect
import os
import warnings
from functools import partial
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .. import backend, engine
from ..base import ArgumentError, ContextError, EmberError, ShapeError, brief_names
from ..context import Context, current_context
from ..engine import native
from ..ops import registry, ufunc_loops
from ..ops.registry import OpContext, UfuncForm
from ..ops.ufunc_loops import Loop
from .expand import expand_loops
from .cse import optimized_heads
from . import planner
from .passes import GraphState, compile_graph, mirror_enabled
from .storage_types import STYPE_IDS, declared_stype, infer_entry_stypes


def _nd():
    from .. import ndarray as nd
    return nd


def bulk_size() -> int:
    """Nodes per engine op (EMBER_EXEC_BULK_EXEC_MAX_NODE, or MXNet's MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN)."""
    for key in ("EMBER_EXEC_BULK_EXEC_MAX_NODE", "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN"):
        v = os.environ.get(key)
        if v is not None:
            try:
                return max(1, int(v))
            except ValueError:
                raise EmberError(f"{key} must be an integer, got {v!r}") from None
    if os.environ.get("MXNET_EXEC_BULK_EXEC_TRAIN", "1") == "0":
        return 1
    return 15


def _as_list_or_dict(value, names: Sequence[str], what: str, required: bool) -> Dict[str, object]:
    if value is None:
        if required and names:
            raise ArgumentError(f"bind: {what} are missing (need {brief_names(names)})")
        return {}
    if isinstance(value, dict):
        # MXNet ignores names the symbol lacks (its own tests bind one dict to several symbols); one
        # holding an array may be a typo: say so
        unknown = [k for k, v in value.items() if k not in names and v is not None]
        if unknown and what == "arguments":
            warnings.warn(f"bind: {brief_names(unknown)} are not arguments of the symbol {brief_names(names)}: "
                          "ignored, as MXNet does", stacklevel=3)
        out = {k: v for k, v in value.items() if k in names}
    elif isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise ArgumentError(f"bind: {len(value)} {what} given, the symbol has {len(names)} {brief_names(names)}")
        out = dict(zip(names, value))
    else:
        raise TypeError(f"bind: {what} must be a list or a dict, got {type(value).__name__}")
    if required:
        missing = [n for n in names if out.get(n) is None]
        if missing:
            raise ArgumentError(f"bind: missing {what} {brief_names(missing)}")
    return out


def _grad_req_dict(grad_req, names: Sequence[str]) -> Dict[str, str]:
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in names}
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(names):
            raise ValueError(f"grad_req list has {len(grad_req)} entries for {len(names)} arguments")
        reqs = dict(zip(names, grad_req))
    elif isinstance(grad_req, dict):
        # names the symbol lacks are ignored, as MXNet (one grad_req dict serves several symbols)
        reqs = {n: grad_req.get(n, "null") for n in names}
    else:
        raise TypeError(f"grad_req must be a str, list or dict, got {type(grad_req).__name__}")
    for n, r in reqs.items():
        if r not in ("write", "add", "null", "inplace"):
            raise ValueError(f"grad_req for '{n}' must be 'write', 'add' or 'null', got {r!r}")
    return {n: ("write" if r == "inplace" else r) for n, r in reqs.items()}


# Operators MXNet 1.9.1 registers without input names: its monitor calls their inputs input0, input1, ...
_UNNAMED_INPUTS = frozenset({"Activation", "SoftmaxActivation"})


class _MonitorName(str):
    """A monitor callback's name: a str that also answers MXNet's bytes `.decode()` (py_str)."""

    __slots__ = ()

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return str(self)


class SharedPool:
    """Storage blocks shared by executors made from one another (`reshape`, `shared_exec`: buckets).

    Executors sharing a pool reuse each other's bytes for their intermediates, as MXNet's shared
    memory pool does, so they must not run at the same time; the engine keeps them apart without
    any wait.  When an executor starts forward or backward and another one used the pool last,
    `claim` pushes one barrier op that writes every var of both, so the new user's ops come after
    everything the previous user had pushed (and after the reads of its outputs), and a later
    return to the previous user waits for the new one the same way.  Outputs are read outside
    forward/backward, so every executor also adds the output vars of earlier executors whose bytes
    overlap a tensor of its own to that tensor's vars: an old executor's outputs then read what the
    new one wrote there, as in MXNet (a smaller reshaped executor writes into the first bytes of
    the old outputs).
    """

    def __init__(self):
        self.blocks: List[object] = []
        self._heads: List[List[tuple]] = []   # per block: (lo, hi, output var, weakref to its storage)
        self._current = None                  # weakref to the storage that used the pool last
        self._current_vars: Optional[List[object]] = None  # and its vars

    def take(self, sizes: Sequence[int], alloc) -> List[tuple]:
        """(pool block, byte offset) for each planned block: packed into the pool's blocks (largest
        first, into the first free range that fits), new pool blocks only for what does not fit."""
        used = [0] * len(self.blocks)  # bytes of each pool block already given to this executor
        out: List[tuple] = [(0, 0)] * len(sizes)
        for b in sorted(range(len(sizes)), key=lambda i: -int(sizes[i])):
            need = planner.align(max(int(sizes[b]), 1))
            pick = next((i for i, blk in enumerate(self.blocks) if blk.size - used[i] >= need), None)
            if pick is None:
                self.blocks.append(alloc(need))
                self._heads.append([])
                used.append(0)
                pick = len(self.blocks) - 1
            out[b] = (pick, used[pick])
            used[pick] += need
        return out

    def overlapping_outputs(self, block: int, lo: int, hi: int) -> List[object]:
        """Output vars of earlier executors on bytes [lo, hi) of `block`."""
        return [v for a, b, v, ref in self._heads[block] if a < hi and lo < b and ref() is not None]

    def register_output(self, block: int, lo: int, hi: int, var, owner) -> None:
        import weakref
        entries = self._heads[block]
        if len(entries) > 64:  # forget executors that are gone
            entries[:] = [e for e in entries if e[3]() is not None]
        entries.append((lo, hi, var, weakref.ref(owner)))

    def claim(self, storage: "_Storage", ctx: Context) -> None:
        """Make `storage` the pool's user, ordered after the previous user's ops (one barrier op).

        The previous user's vars are held here, not through its executor: an executor dropped
        while its ops are still pending (a Module replacing a reshaped one) is waited for too."""
        import weakref
        last = self._current() if self._current is not None else None
        if last is storage:
            return
        previous = self._current_vars
        self._current, self._current_vars = weakref.ref(storage), storage.all_vars
        if previous is None:
            return
        both = list(dict.fromkeys(previous + storage.all_vars))
        engine.push(lambda: None, write=both, device=ctx, name="exec:switch_shared_storage")


class _Storage:
    """Blocks of the memory plan, their segment vars, and one view per planned entry."""

    def __init__(self, g: GraphState, ctx: Context, pool: Optional[SharedPool] = None):
        plan = g.plan
        pl = plan.placement
        self.pool = pool if pool is not None else SharedPool()
        alloc = backend.of(ctx).allocator(ctx.device_id)[0]
        where = self.pool.take(pl.block_sizes, alloc)   # planned block -> (pool block, byte offset)
        self.blocks = [self.pool.blocks[pb][base:base + max(int(size), 1)]
                       for (pb, base), size in zip(where, pl.block_sizes)]
        ngroups = len(plan.sizes)
        per_block: Dict[int, List[int]] = {}
        for gid in range(ngroups):
            per_block.setdefault(pl.block[gid], []).extend((pl.offset[gid], pl.offset[gid] + plan.sizes[gid]))
        seg_vars: Dict[int, tuple] = {}
        for b, pts in per_block.items():
            bounds = sorted(set(pts))
            seg_vars[b] = (bounds, [engine.Var(f"exec:block{b}:{bounds[i]}", bounds[i + 1] - bounds[i])
                                    for i in range(len(bounds) - 1)])
        self.group_vars: List[List[object]] = []
        for gid in range(ngroups):
            b, off, size = pl.block[gid], pl.offset[gid], plan.sizes[gid]
            bounds, vars_ = seg_vars[b]
            lo = bisect.bisect_left(bounds, off)
            hi = bisect.bisect_left(bounds, off + size)
            self.group_vars.append(vars_[lo:hi])
        # A forward output is handed out as one NDArray, guarded by one var: that var joins every
        # group whose bytes overlap the output's, so reuse of those bytes waits for the output's readers.
        self.head_var: Dict[int, object] = {}
        head_ranges = []
        for node, i in g.heads:
            gid = plan.group_of.get((id(node), i))
            if gid is None or gid in self.head_var:
                continue
            var = engine.Var(f"exec:output:{node.name}")
            self.head_var[gid] = var
            b, lo, hi = pl.block[gid], pl.offset[gid], pl.offset[gid] + plan.sizes[gid]
            head_ranges.append((b, lo, hi, var))
            for other in range(ngroups):
                if pl.block[other] == b and pl.offset[other] < hi and lo < pl.offset[other] + plan.sizes[other]:
                    self.group_vars[other].append(var)
        self.all_vars = list(dict.fromkeys([v for _, vs in seg_vars.values() for v in vs] +
                                           list(self.head_var.values())))
        # Earlier executors' outputs on the same bytes: reading them waits for our writes there.
        for gid in range(ngroups):
            (pb, base), lo = where[pl.block[gid]], pl.offset[gid]
            self.group_vars[gid].extend(self.pool.overlapping_outputs(pb, base + lo, base + lo + plan.sizes[gid]))
        for b, lo, hi, var in head_ranges:
            pb, base = where[b]
            self.pool.register_output(pb, base + lo, base + hi, var, self)
        self.views: Dict[tuple, object] = {}
        self.vars: Dict[tuple, List[object]] = {}
        for key, gid in plan.group_of.items():
            shape, dtype = g.shapes[key], np.dtype(g.dtypes[key])
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            off = pl.offset[gid]
            raw = self.blocks[pl.block[gid]][off:off + nbytes]
            self.views[key] = raw.view(dtype).reshape(shape)
            self.vars[key] = self.group_vars[gid]


class _Step(NamedTuple):
    """One node of a bound graph, ready to run."""

    run: Callable[[bool, object], None]  # run(is_train, rng): the node's kernel on its arrays
    reads: List[object]         # engine vars of the planned storage it reads
    writes: List[object]        # ... and writes
    array_reads: List[object]   # bound NDArrays it reads (arguments, head gradients, gradient arrays)
    array_writes: List[object]  # ... and writes (aux states, mutated inputs, gradients written directly)
    needs_rng: bool             # draws from the device's random generator
    name: str
    size: int                   # elements of its outputs
    calls: Optional[tuple]      # run(False, None) and run(True, None) as calls without arguments (no
                                # Python frame of ours around the kernel); None if it needs the RNG
    loop: Optional[Loop]        # numpy's inner loop for it, when the kernel is one (ember/ops/ufunc_loops.py)
    outs: Optional[list]        # the list its kernel takes its output arrays from at each call (an entry
                                # may be pointed elsewhere for one call); None where they are fixed
                                # inside it (a ufunc loop or call, a pattern-kept step)


class _Segment(NamedTuple):
    """Consecutive steps run as one engine op (MXNet's bulk execution)."""

    run: Callable[[bool, object], None]  # run(is_train, rng): every step, in order
    deps: Callable[[], tuple]            # () -> (reads, writes, fresh): its engine variables
    name: str
    size: int                            # elements of all the steps' outputs
    needs_rng: bool

    @classmethod
    def of(cls, steps: Sequence[_Step]) -> "_Segment":
        reads, writes = [], []
        for st in steps:
            reads.extend(st.reads)
            writes.extend(st.writes)
            reads.extend(a._chunk.var for a in st.array_reads)
            writes.extend(a._chunk.var for a in st.array_writes)
        reads, writes = _distinct_access(reads, writes)
        parts = _merged_loops(steps) if len(steps) > 1 else []
        if len(steps) == 1:
            run = steps[0].run
        elif all(calls is not None for _, calls in parts):
            by_train = (tuple(calls[0] for _, calls in parts), tuple(calls[1] for _, calls in parts))

            def run(is_train, rng, _keep=steps):  # the steps keep the arrays their loops point at
                for call in by_train[is_train]:
                    call()
        else:  # some steps draw: they take the generator, the others are called without arguments
            parts = tuple(parts)

            def run(is_train, rng, _keep=steps):
                for r, calls in parts:
                    if calls is None:
                        r(is_train, rng)
                    else:
                        calls[is_train]()
        name = steps[0].name if len(steps) == 1 else f"{steps[0].name}..{steps[-1].name}"
        return cls(run, partial(_given, (reads, writes, ())), name, sum(st.size for st in steps),
                   any(st.needs_rng for st in steps))


def _distinct_access(reads: list, writes: list) -> Tuple[list, list]:
    """(reads, writes) each without repeats, a var both read and written counted as written."""
    writes = list(dict.fromkeys(writes))
    wid = set(map(id, writes))
    return [v for v in dict.fromkeys(reads) if id(v) not in wid], writes


def _merged_loops(steps: Sequence[_Step]) -> List[tuple]:
    """The steps as (run, None) for one that draws, else (None, its calls), where each run of
    consecutive steps with inner loops becomes one native call running them all."""
    parts, loops = [], []
    for st in list(steps) + [None]:
        if st is not None and st.loop is not None:
            loops.append(st.loop.spec)
            continue
        if loops:
            call = native.ufunc_loops(loops)
            parts.append((None, (call, call)))
            loops = []
        if st is not None:
            parts.append((st.run, None) if st.calls is None else (None, st.calls))
    return parts


class _CopiedForward:
    """The fixed part of `Executor.forward_copied` for one set of argument targets: the forward
    segments' runs and engine variables, the outputs' arrays (made again after a registry change).

    `direct`: (list, index, output) of each output the graph's last step writes through its kernel's
    `outs` list, where nothing reads the outputs after the forward (no backward nodes): the call
    points that entry at the returned array, so the kernel writes it there (no copy); `copied`: the
    other outputs, copied from the executor's arrays."""

    __slots__ = ("targets", "given", "version", "runs", "needs_rng", "target_data", "out_data", "out_types",
                 "reads", "writes", "size", "name", "direct", "copied")

    def __init__(self, ex: "Executor", targets: Sequence):
        segments, outs = ex._fwd_segments, ex.outputs
        self.targets = tuple(map(id, targets))
        # a tuple of targets (a CachedGraph slot's) is known by identity at the next call; a list may
        # have changed since
        self.given = targets if type(targets) is tuple else None
        self.version = ex._kernels_version
        self.runs = tuple(seg.run for seg in segments)
        # named as its steps (profiler, traces): first..last
        self.name = "copyto" if not segments else segments[0].name if len(segments) == 1 else \
            f"{segments[0].name.split('..')[0]}..{segments[-1].name.split('..')[-1]}"
        self.needs_rng = any(seg.needs_rng for seg in segments)
        self.target_data = [t._data for t in targets]
        self.out_data = [o._data for o in outs]
        self.out_types = [(o._data.shape, o._data.dtype) for o in outs]
        reads = [o._chunk.var for o in outs]
        writes = [t._chunk.var for t in targets]
        for seg in segments:
            r, w, _ = seg.deps()
            reads.extend(r)
            writes.extend(w)
        self.reads, self.writes = _distinct_access(reads, writes)
        self.size = sum(t._data.size for t in targets) + sum(seg.size for seg in segments) + \
            sum(o._data.size for o in outs)
        self.direct = _written_directly(ex, self.out_data)
        taken = {i for _, _, i in self.direct}
        self.copied = tuple(i for i in range(len(outs)) if i not in taken)


def _written_directly(ex: "Executor", out_data: list) -> tuple:
    """(the last step's `outs` list, index in it, output index) of each output array the graph's
    last step writes through that list, when no step runs after it, nothing reads the outputs later
    (no backward nodes), the step's node changes no input or aux state in place and the array is
    given out once and is no bound argument (see `_CopiedForward`)."""
    g = ex._graph
    last = next((i for i in reversed(range(g.num_forward)) if ex._runners[i] is not None), None)
    if last is None or len(g.nodes) != g.num_forward or ex._runners[last].outs is None:
        return ()
    node = g.nodes[last]
    if len(node.inputs) != node.num_inputs() or node.op.mutated_inputs(node.parsed_attrs):
        return ()  # aux states or inputs written in place: its outputs may be them
    given = ex._runners[last].outs
    bound = {id(a._data) for a in ex._var_arrays.values()}
    direct = []
    for i, data in enumerate(out_data):
        if sum(d is data for d in out_data) != 1 or id(data) in bound:
            continue  # an output given out twice (both copied from the one array), or an argument
        ks = [k for k, o in enumerate(given) if o is data]
        if len(ks) == 1:
            direct.append((given, ks[0], i))
    return tuple(direct)


def _run_copied(runs, sources, targets, is_train, rng, made, outs, direct, copied) -> None:
    for dst, src in zip(targets, sources):
        np.copyto(dst, src, "unsafe")
    if direct:
        for given, k, i in direct:  # the last kernel writes these outputs into the new arrays
            given[k] = made[i]
        try:
            for run in runs:
                run(is_train, rng)
        finally:
            for given, k, i in direct:
                given[k] = outs[i]
    else:
        for run in runs:
            run(is_train, rng)
    for i in copied:
        np.copyto(made[i], outs[i])


def _copied_deps(plan: _CopiedForward, sources, made) -> tuple:
    """forward_copied's op variables: its sources' too; the new outputs fresh."""
    from ..imperative.invoke import FreshVars
    return [s._chunk.var for s in sources] + plan.reads, plan.writes, FreshVars([c for _, c in made])


_runtime: tuple = ()


def _imperative_runtime() -> tuple:
    """(imperative.resources, invoke.execute, storage.alloc, NDArray, invoke.INLINE_MAX_ELEMENTS),
    imported on first use (the imperative package imports this module) and kept here: segments are
    pushed on every forward."""
    global _runtime
    if not _runtime:
        from ..imperative import resources, storage
        from ..imperative.invoke import INLINE_MAX_ELEMENTS, execute
        from ..imperative.ndarray import NDArray
        _runtime = (resources, execute, storage.alloc, NDArray, INLINE_MAX_ELEMENTS)
    return _runtime


def _given(value):
    return value


def _with_rng(deps: Callable[[], tuple], var) -> tuple:
    """deps() plus the generator's var, read and written by a segment that draws (see resources.rng)."""
    reads, writes, fresh = deps()
    return list(reads) + [var], writes + [var], fresh


_kernels_version = [0]  # bumped when a kernel is registered or overridden: executors rebuild their steps


def _kernels_changed() -> None:
    _kernels_version[0] += 1


registry.on_change(_kernels_changed)


def _form_operands(form: UfuncForm, attrs: dict, ins: list) -> Optional[tuple]:
    """The ufunc's operands for a node of that form on inputs `ins` (None: they do not fit it); a
    scalar as a 0-d array of the input's dtype (MXNet's DType(scalar)), which numpy takes faster
    than a Python or numpy scalar."""
    if len(ins) != (2 if form.form == "binary" else 1):
        return None
    if form.form in ("binary", "unary"):
        return tuple(ins)
    s = np.array(float(attrs["scalar"] if form.constant is None else form.constant), ins[0].dtype)
    return (ins[0], s) if form.form == "scalar" else (s, ins[0])


def _node_runner(node, ins: list, outs: list, aux: list, ctx: Context,
                 xp) -> Tuple[Callable, Optional[tuple], Optional[Loop], Optional[list]]:
    """(run(is_train, rng), its calls without arguments or None, numpy's inner loop or None, `outs`
    where the kernel is given that list at each call else None) of one node on fixed arrays.  When
    the op's CPU kernel is one ufunc call (`OpDef.cpu_ufunc`): numpy's inner loop for it where
    there is one for these arrays, else the ufunc called directly (as the imperative tiny-op path
    does; the operator forms); otherwise its kernel.  All are the registry's of now: executors
    rebuild their steps when it changes."""
    opdef, attrs, dev = node.op, node.parsed_attrs, ctx.device_type
    form = opdef.cpu_ufunc() if dev == "cpu" and not aux and len(outs) == 1 else None
    if form is not None and form.kernel_from is not None and outs[0].size >= form.kernel_from:
        form = None
    operands = _form_operands(form, attrs, ins) if form is not None and outs[0].dtype.kind in form.kinds else None
    if operands is not None:
        out = outs[0]
        loop = ufunc_loops.loop_of(form.ufunc, operands, out)
        if loop is not None:
            native_call = native.ufunc_loops([loop.spec])

            def run_loop(is_train, rng, _loop=loop):  # the default keeps the loop's arrays alive
                native_call()
            return run_loop, (native_call, native_call), loop, None
        if form.form != "unary" and form.constant is None:
            from ..imperative.fastpath import ufunc_call
            call, _ = ufunc_call(form, ins[0].dtype)
            a, b = operands

            def run_ufunc(is_train, rng):
                call(a, b, out)
            direct = partial(call, a, b, out)
            return run_ufunc, (direct, direct), None, None
    opctx = (OpContext(xp, False, ctx), OpContext(xp, True, ctx))
    try:
        kernel = opdef.kernel(dev)
    except EmberError:  # no kernel for this device: the lookup raises again when the node runs
        kernel = None

    drawing = [None, None, None]  # the generator last given, and its two OpContexts (made once per generator)

    def run(is_train, rng):
        if rng is None:
            opc = opctx[is_train]
        else:
            if rng is not drawing[0]:
                drawing[:] = [rng, OpContext(xp, False, ctx, rng), OpContext(xp, True, ctx, rng)]
            opc = drawing[1 + is_train]
        (kernel or opdef.kernel(dev))(opc, attrs, ins, outs, aux)
    if kernel is None or "rng" in tuple(opdef.resources):
        return run, None, None, outs
    return run, (partial(kernel, opctx[0], attrs, ins, outs, aux), partial(kernel, opctx[1], attrs, ins, outs, aux)), \
        None, outs


def _pattern_kept(run: Callable, src, out, stype: str, xp) -> Callable:
    """`run` restricted to the sparsity pattern of its input `src` (an op declaring `keeps_pattern_of`,
    MXNet's _scatter_* ops, on a sparse input): the graph holds `src` densely, so its stored positions
    are its non-zero rows (row_sparse) or elements (csr); the output is zeroed elsewhere, and the
    output's cast to `stype` then stores those positions."""
    def masked(is_train, rng):
        nonzero = src != 0
        if stype == "row_sparse":
            nonzero = nonzero.any(axis=tuple(range(1, src.ndim)), keepdims=True)
        run(is_train, rng)  # after the mask is taken: the output may share the input's storage
        xp.copyto(out, 0, where=~nonzero)
    return masked


class Executor:
    """A symbol bound to arrays on one device; forward/backward push the graph's nodes to the engine."""

    def __init__(self, symbol, ctx: Optional[Context], args, args_grad=None, grad_req="write",
                 aux_states=None, plan_method: str = "best", group2ctx=None,
                 shared_pool: Optional[SharedPool] = None):
        from ..imperative.ndarray import NDArray
        self._symbol = symbol
        self._ctx = ctx if ctx is not None else current_context()
        if not isinstance(self._ctx, Context):
            raise TypeError(f"ctx must be a Context, got {type(self._ctx).__name__}")
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self._out_names = symbol.list_outputs()
        args_d = _as_list_or_dict(args, self._arg_names, "arguments", required=True)
        for k, v in args_d.items():
            if not isinstance(v, NDArray):
                raise TypeError(f"bind: argument '{k}' must be an NDArray, got {type(v).__name__}")
        grads_d = _as_list_or_dict(args_grad, self._arg_names, "gradient arrays", required=False)
        aux_d = _as_list_or_dict(aux_states, self._aux_names, "auxiliary states", required=True)
        reqs = _grad_req_dict(grad_req, self._arg_names) if args_grad is not None else \
            {n: "null" for n in self._arg_names}
        reqs = {n: (r if grads_d.get(n) is not None else "null") for n, r in reqs.items()}
        for what, d in (("argument", args_d), ("gradient", grads_d), ("aux state", aux_d)):
            for k, v in d.items():
                if v is not None and backend.device_key(v.context) != backend.device_key(self._ctx):
                    raise ContextError(f"bind: {what} '{k}' is on {v.context}, the executor on {self._ctx}")
        self._xp = backend.of(self._ctx).xp
        self.arg_arrays = [args_d[n] for n in self._arg_names]
        self.grad_arrays = [grads_d.get(n) for n in self._arg_names]
        self.aux_arrays = [aux_d[n] for n in self._aux_names]
        # The graph computes on dense arrays: a sparse argument (csr / row_sparse) is read through a
        # dense buffer of the executor, refreshed at each forward; a sparse aux state likewise, and
        # written back (cast into the sparse array) after each forward, as MXNet's storage fallback
        # does for mutated inputs; a sparse gradient array (MXNet's grad_stype) is computed into such
        # a buffer and cast into the array after each backward.
        self._sparse_args: List[Tuple[NDArray, NDArray]] = []
        self._sparse_aux: List[Tuple[NDArray, NDArray]] = []   # (dense buffer, sparse aux state)
        for arrays in (args_d, aux_d):
            for n, a in list(arrays.items()):
                if a.stype != "default":
                    arrays[n] = dense = _nd().zeros(a.shape, ctx=self._ctx, dtype=a.dtype)
                    self._sparse_args.append((a, dense))
                    if arrays is aux_d:
                        self._sparse_aux.append((dense, a))
        self._sparse_grads: Dict[str, Tuple[NDArray, NDArray]] = {}
        for n, gr in list(grads_d.items()):
            if gr is not None and reqs[n] != "null" and gr.stype != "default":
                if reqs[n] != "write":
                    raise ArgumentError(f"bind: gradient array of '{n}' is {gr.stype}: sparse gradient arrays "
                                        f"take grad_req 'write', not '{reqs[n]}'")
                dense = _nd().zeros(gr.shape, ctx=self._ctx, dtype=gr.dtype)
                self._sparse_grads[n] = (dense, gr)
                grads_d[n] = dense
        self._grad_req = reqs
        shapes = {n: tuple(a.shape) for n, a in list(args_d.items()) + list(aux_d.items())}
        dtypes = {n: np.dtype(a.dtype) for n, a in list(args_d.items()) + list(aux_d.items())}
        for n in self._arg_names:
            gr = grads_d.get(n)
            if gr is not None and reqs[n] != "null" and tuple(gr.shape) != shapes[n]:
                raise ShapeError(f"bind: gradient array of '{n}' has shape {tuple(gr.shape)}, "
                                 f"the argument has {shapes[n]}")
        # loops and cached-op calls become ordinary nodes, now that the bound shapes give their lengths
        heads, _ = optimized_heads(expand_loops(symbol._outputs, shapes))  # common subexpressions once (MXNet's)
        self._run_heads = heads
        g = GraphState(heads=heads, grad_req=reqs, known_shapes=shapes, known_dtypes=dtypes,
                       mirror=mirror_enabled(), plan_method=plan_method)
        self._graph = g = compile_graph(g)
        # products ahead: each run first wakes the CPU team, whose helpers may sleep between steps
        self._wakes_team = self._ctx.device_type == "cpu" and any(n.op is not None and n.op.expensive
                                                                 for n in g.nodes)
        # storage types of every entry (MXNet's storage inference), from the bound arrays' own: bind-time
        # work only; a rule refusing a combination (BatchNorm's fix_gamma on sparse input) raises here
        self._given_sparse = {n: a for n, a in zip(self._arg_names, self.arg_arrays) if a.stype != "default"}
        self._given_sparse.update((n, a) for n, a in zip(self._aux_names, self.aux_arrays) if a.stype != "default")
        self._entry_stypes = infer_entry_stypes(g.nodes, {n: a.stype for n, a in self._given_sparse.items()})
        for n in g.nodes:
            if n.op is None and n.name in shapes and g.shapes[(id(n), 0)] != shapes[n.name]:
                raise ShapeError(f"bind: array for '{n.name}' has shape {shapes[n.name]}, "
                                 f"the graph needs {g.shapes[(id(n), 0)]}")
        for name, e in g.grad_entries.items():
            if e is not None and reqs.get(name, "null") != "null" and e[0].op is not None \
                    and g.shapes.get((id(e[0]), e[1]), shapes[name]) != shapes[name]:
                raise ShapeError(f"bind: the gradient the graph computes for '{name}' has shape "
                                 f"{g.shapes[(id(e[0]), e[1])]}, the argument has {shapes[name]} (its operator's "
                                 "symbolic gradient does not support that argument shape)")
        self._storage = _Storage(g, self._ctx, shared_pool)
        self._group2ctx = dict(group2ctx) if group2ctx else None
        nd = _nd()
        self._head_grads = [nd.ones(g.shapes[(id(v), 0)], ctx=self._ctx, dtype=g.dtypes[(id(v), 0)])
                            for v in g.head_grad_vars]
        bound = {**aux_d, **args_d}  # an argument's array before an aux state's of the same name
        self._var_arrays = {id(n): bound[n.name] for n in g.nodes if n.op is None and n.name in bound}
        for v, arr in zip(g.head_grad_vars, self._head_grads):
            self._var_arrays[id(v)] = arr
        self._grad_target = {key: grads_d[name] for key, name in g.external.items()}
        self.outputs = self._make_outputs()
        self._copied: Optional[_CopiedForward] = None  # forward_copied's plan
        self._fwd_segments = self._bwd_segments = None
        self._rebuild_steps()
        self._is_train = False
        self._monitor = None
        self._monitor_all = False

    # -- construction helpers -----------------------------------------------------------
    def _make_outputs(self):
        """The output NDArrays: views of the planned storage; an output whose inferred storage type is
        sparse is a sparse array the forward casts the dense values into (`_sparse_outs`)."""
        from ..imperative.ndarray import NDArray
        from ..imperative.sparse_ndarray import sparse_zeros
        outs = []
        self._sparse_outs: List[Tuple[NDArray, NDArray]] = []  # (dense head, sparse output)
        for node, i in self._graph.heads:
            key = (id(node), i)
            if node.op is None:
                given = self._given_sparse.get(node.name)
                outs.append(given if given is not None else self._var_arrays[id(node)])
                continue
            var = self._storage.head_var[self._graph.plan.group_of[key]]
            dense = NDArray._wrap(self._storage.views[key], var, self._ctx)
            stype = self._entry_stypes.get(key, "default")
            if stype != "default":
                out = sparse_zeros(stype, dense.shape, self._ctx, dense.dtype)
                self._sparse_outs.append((dense, out))
                dense = out
            outs.append(dense)
        return outs

    def _make_runner(self, node) -> Optional["_Step"]:
        """The node as a `_Step` (None for a variable)."""
        if node.op is None:
            return None
        from ..imperative.ndarray import NDArray
        st = self._storage
        k = node.num_inputs()
        reads, writes, var_reads, var_writes = [], [], [], []

        def take(key, got, planned_vars, arrays):
            # a planned entry (a view of the plan's storage, guarded by its engine vars) or an
            # array the caller bound (a gradient target: guarded by its own var)
            if key in st.views:
                got.append(st.views[key])
                planned_vars.extend(st.vars[key])
            else:
                arr = self._grad_target[key]
                got.append(arr)
                arrays.append(arr)

        in_get = []
        for pos, (c, j) in enumerate(node.inputs):
            if c.op is None:
                arr = self._var_arrays.get(id(c))
                if arr is None:
                    raise EmberError(f"executor: variable '{c.name}' has no array bound")
                in_get.append(arr)
                (var_writes if (pos >= k or pos in node.op.mutated_inputs(node.parsed_attrs)) else var_reads).append(arr)
            else:
                take((id(c), j), in_get, reads, var_reads)
        out_get = []
        for i in range(node.num_outputs()):
            take((id(node), i), out_get, writes, var_writes)
        # an NDArray's data never changes (writes go into it): the kernel's arrays are fixed now
        ins = [x._data if isinstance(x, NDArray) else x for x in in_get]
        outs = [x._data if isinstance(x, NDArray) else x for x in out_get]
        reads, writes = _distinct_access(reads, writes)
        run, calls, loop, outs_given = _node_runner(node, ins[:k], outs, ins[k:], self._ctx, self._xp)
        keep = node.op.keeps_pattern_of
        if keep is not None:
            src_stype = self._entry_stypes.get((id(node.inputs[keep][0]), node.inputs[keep][1]), "default")
            if src_stype != "default" and self._entry_stypes.get((id(node), 0)) == src_stype:
                run, calls, loop = _pattern_kept(run, ins[keep], outs[0], src_stype, self._xp), None, None
                outs_given = None
        return _Step(run, reads, writes, var_reads, var_writes, "rng" in tuple(node.op.resources), node.name,
                     sum(int(o.size) for o in outs), calls, loop, outs_given)

    def _segments(self, lo: int, hi: int) -> List["_Segment"]:
        size = bulk_size()
        segs, cur = [], []
        for i in range(lo, hi):
            r = self._runners[i]
            if r is None:
                continue
            cur.append(r)
            if len(cur) >= size:
                segs.append(_Segment.of(cur))
                cur = []
        if cur:
            segs.append(_Segment.of(cur))
        return segs

    def _rebuild_steps(self) -> None:
        """The steps of every node and their segments (again after a kernel was registered or
        overridden: a step may call an op's ufunc directly only while its kernel is that ufunc)."""
        g = self._graph
        self._runners = [self._make_runner(n) for n in g.nodes]
        self._fwd_segments = self._segments(0, g.num_forward)
        self._bwd_segments = self._segments(g.num_forward, len(g.nodes))
        self._kernels_version = _kernels_version[0]

    def _refresh_steps(self) -> None:
        """Rebuild the steps if a kernel was registered or overridden since they were made."""
        if self._kernels_version != _kernels_version[0]:
            self._rebuild_steps()

    def _run_segments(self, backward: bool, is_train: bool) -> None:
        self._refresh_steps()
        self._push_segments(self._bwd_segments if backward else self._fwd_segments, is_train)

    def _push_segments(self, segments: Sequence["_Segment"], is_train: bool) -> None:
        """Run each segment as one engine op, in order, through `invoke.execute` (in this thread
        when it is small and the engine lets it start now, else pushed after what it depends on)."""
        resources, execute = _imperative_runtime()[:2]
        ctx = self._ctx
        host = ctx.device_type == "cpu"
        for seg in segments:
            rng, deps = None, seg.deps
            if seg.needs_rng:
                rvar, rng = resources.rng(ctx)
                deps = partial(_with_rng, seg.deps, rvar)
            if host:
                execute(seg.run, (is_train, rng), seg.name, seg.size, deps, ctx)
            else:
                run = backend.of(ctx).run_on(partial(seg.run, is_train, rng), ctx.device_id)
                execute(run, (), seg.name, seg.size, deps, ctx)

    # -- running ------------------------------------------------------------------------
    def forward(self, is_train: bool = False, **kwargs):
        """Copy keyword arrays into the arguments, push every forward node; returns `outputs`."""
        for k, v in kwargs.items():
            if k not in self.arg_dict:
                raise ArgumentError(f"forward: '{k}' is not an argument of the symbol {brief_names(self._arg_names)}")
            dst = self.arg_dict[k]
            if hasattr(v, "shape") and tuple(v.shape) != tuple(dst.shape):
                raise ShapeError(f"forward: '{k}' has shape {tuple(v.shape)}, the executor was bound with "
                                 f"{tuple(dst.shape)} (use reshape)")
            if dst.stype != "default":
                dst[:] = v  # a sparse argument: the one assignment sparse arrays take
            else:
                dst[...] = v
        if self._wakes_team:
            native.pool_prewake()
        self._is_train = bool(is_train)
        for given, dense in self._sparse_args:
            given.copyto(dense)  # the sparse argument's values now, densely
        self._storage.pool.claim(self._storage, self._ctx)
        if self._monitor is not None:
            self._run_monitored(0, self._graph.num_forward, self._is_train)
        else:
            self._run_segments(False, self._is_train)
        for dense, given in self._sparse_aux:
            dense.copyto(given)  # what the forward wrote into the aux state, cast into its storage
        for dense, out in self._sparse_outs:
            dense.copyto(out)  # a sparse output: the dense values cast into its storage type
        return self.outputs

    def forward_copied(self, sources: Sequence, targets: Sequence, is_train: bool) -> Optional[list]:
        """Copy each of `sources` into its argument NDArray in `targets`, run the forward and return
        copies of the outputs, all as one engine op: what `copyto`, `forward` and `copy` of each
        output do, with one op where those push one per copy and per segment (a hybridized block's
        call).  None (nothing done) where the general path must run it: a device executor, a
        monitor, sparse arguments, a source that is not a host array of its target's shape or
        shares its storage, a call too large to run in the caller with several segments (pushed
        one by one, independent branches may run in parallel).  Where nothing reads the outputs
        after the forward (no backward nodes), the graph's last kernel writes its outputs straight
        into the returned arrays, and the executor's own output arrays are left as they were."""
        ctx = self._ctx
        if ctx.device_type != "cpu" or self._monitor is not None or self._sparse_args or self._sparse_outs:
            return None
        for src, dst in zip(sources, targets):
            chunk = src._chunk
            chunk.check()
            if chunk is dst._chunk or type(src._data) is not np.ndarray or src._data.shape != dst._data.shape:
                return None
        self._refresh_steps()
        plan = self._copied
        if plan is None or plan.version != self._kernels_version or \
                (plan.given is not targets and plan.targets != tuple(map(id, targets))):
            plan = self._copied = _CopiedForward(self, targets)
        resources, execute, alloc, ndarray, inline_max = _imperative_runtime()
        if len(plan.runs) > 1 and plan.size > inline_max:
            return None  # pushed as one op its segments would run in turn: keep them apart (parallel branches)
        if self._wakes_team:
            native.pool_prewake()
        self._is_train = is_train = bool(is_train)
        self._storage.pool.claim(self._storage, ctx)
        made = [alloc(shape, dtype, ctx) for shape, dtype in plan.out_types]
        rng, deps = None, partial(_copied_deps, plan, sources, made)
        if plan.needs_rng:
            rvar, rng = resources.rng(ctx)
            deps = partial(_with_rng, deps, rvar)
        execute(_run_copied, (plan.runs, [s._data for s in sources], plan.target_data, is_train, rng,
                              [d for d, _ in made], plan.out_data, plan.direct, plan.copied), plan.name, plan.size,
                deps, ctx)
        return [ndarray(data, chunk) for data, chunk in made]

    def backward(self, out_grads=None, is_train: bool = True) -> None:
        """Push the backward nodes, then write or add each gradient into its grad array."""
        from ..imperative.ndarray import NDArray
        g = self._graph
        if not g.grad_entries:
            return
        if self._wakes_team:
            native.pool_prewake()
        if isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        if isinstance(out_grads, dict):
            out_grads = [out_grads.get(n) for n in self._out_names]
        self._check_head_grads_given(out_grads)
        if out_grads is not None:
            if len(out_grads) < len(self._head_grads):
                raise ValueError(f"backward: {len(out_grads)} head gradients for {len(self._head_grads)} outputs")
            # more than the outputs: MXNet reads the first ones and ignores the rest
            used = self._heads_needing_grad  # set by _check_head_grads_given
            for i, (dst, src) in enumerate(zip(self._head_grads, out_grads)):
                if src is None:
                    dst[...] = 1
                    continue
                if i not in used:
                    continue  # the backward graph never reads it (shape_array, topk indices): MXNet ignores it
                if tuple(src.shape) != tuple(dst.shape):
                    raise ShapeError(f"backward: head gradient of shape {tuple(src.shape)} for an output of "
                                     f"shape {tuple(dst.shape)}")
                dst[...] = src
            self._custom_head_grads = True
        elif getattr(self, "_custom_head_grads", False):
            for dst in self._head_grads:
                dst[...] = 1
            self._custom_head_grads = False
        self._storage.pool.claim(self._storage, self._ctx)
        if self._monitor is not None:
            self._run_monitored(g.num_forward, len(g.nodes), is_train)
        else:
            self._run_segments(True, is_train)
        self._push_gradient_results()

    def _check_head_grads_given(self, out_grads) -> None:
        """MXNet: an output that is not a loss (its gradient reads the head gradient) needs one."""
        needed = getattr(self, "_heads_needing_grad", None)
        if needed is None:
            g = self._graph
            ids = {id(v): i for i, v in enumerate(g.head_grad_vars)}
            used = {ids[id(c)] for n in g.nodes[g.num_forward:] for c, _ in n.inputs if id(c) in ids}
            used |= {ids[id(e[0])] for e in g.grad_entries.values() if e is not None and id(e[0]) in ids}
            needed = self._heads_needing_grad = sorted(used)
        missing = [i for i in needed if out_grads is None or i >= len(out_grads) or out_grads[i] is None]
        if missing:
            names = [self._out_names[i] for i in missing]
            raise EmberError(f"backward: output {brief_names(names)} is not a loss, so its head gradient is "
                             "required: pass out_grads (to minimize the output itself, end the network with "
                             "MakeLoss / make_loss)")

    def _push_gradient_results(self) -> None:
        g, st = self._graph, self._storage
        sparse = self._sparse_grads
        for name, entry in g.grad_entries.items():
            req = self._grad_req[name]
            dst = sparse[name][0] if name in sparse else self.grad_dict.get(name)
            if dst is None or req == "null":
                continue
            if entry is None:
                if req == "write":
                    dst[...] = 0
                continue
            key = (id(entry[0]), entry[1])
            if g.external.get(key) == name:
                continue
            if key in st.views:
                src_data, src_arr, reads = st.views[key], None, list(st.vars[key])
            else:
                src_arr = self._var_arrays[id(entry[0])] if entry[0].op is None else self._grad_target[key]
                src_data, reads = None, [src_arr._chunk.var]

            def fn(dst=dst, src_data=src_data, src_arr=src_arr, add=(req == "add")):
                s = src_data if src_data is not None else src_arr._data
                if add:
                    dst._data += s
                else:
                    dst._data[...] = s
            reads = [v for v in reads if v is not dst._chunk.var]
            engine.push(fn, read=reads, write=[dst._chunk.var], device=self._ctx, name=f"grad:{name}:{req}")
        for dense, target in sparse.values():
            dense.copyto(target)  # cast into the sparse array's storage, after the gradient was written

    def _sparse_grads_as_inferred(self) -> None:
        """Replace each dense gradient array (grad_req 'write') whose gradient storage inference makes
        sparse by a sparse array of that storage type, cast from the dense gradient after each backward
        (simple_bind allocates gradients as MXNet's does)."""
        from ..imperative.sparse_ndarray import sparse_zeros
        for name, entry in self._graph.grad_entries.items():
            if entry is None or self._grad_req.get(name) != "write" or name in self._sparse_grads:
                continue
            stype = self._entry_stypes.get((id(entry[0]), entry[1]), "default")
            i = self._arg_names.index(name)
            dense = self.grad_arrays[i]
            if stype == "default" or dense is None or dense.stype != "default":
                continue
            sparse = sparse_zeros(stype, dense.shape, dense.context, dense.dtype)
            self._sparse_grads[name] = (dense, sparse)
            self.grad_arrays[i] = sparse

    # -- dictionaries --------------------------------------------------------------------
    @property
    def arg_dict(self) -> Dict[str, object]:
        return dict(zip(self._arg_names, self.arg_arrays))

    @property
    def grad_dict(self) -> Dict[str, object]:
        return {n: a for n, a in zip(self._arg_names, self.grad_arrays) if a is not None}

    @property
    def aux_dict(self) -> Dict[str, object]:
        return dict(zip(self._aux_names, self.aux_arrays))

    @property
    def output_dict(self) -> Dict[str, object]:
        return dict(zip(self._out_names, self.outputs))

    @property
    def grad_req(self) -> Dict[str, str]:
        return dict(self._grad_req)

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params: bool = False) -> None:
        """Copy values into the bound argument / aux arrays (unknown names are errors unless allowed)."""
        from ..imperative.ndarray import NDArray
        for src, dst_dict, what in ((arg_params, self.arg_dict, "argument"), (aux_params or {}, self.aux_dict, "aux state")):
            for name, value in src.items():
                if name not in dst_dict:
                    if allow_extra_params:
                        continue
                    raise ValueError(f"copy_params_from: '{name}' is not an {what} of this executor "
                                     f"(allow_extra_params=True ignores it)")
                dst = dst_dict[name]
                if tuple(value.shape) != tuple(dst.shape):
                    raise ShapeError(f"copy_params_from: '{name}' has shape {tuple(value.shape)}, "
                                     f"the executor's array has {tuple(dst.shape)}")
                if not isinstance(value, NDArray):
                    value = _nd().array(value, dtype=dst.dtype)
                if value is dst:
                    continue
                if np.dtype(value.dtype) != np.dtype(dst.dtype):
                    value = value.astype(dst.dtype)  # MXNet casts to the executor's dtype
                value.copyto(dst)  # across devices too (cpu(0) -> cpu(1))

    def set_monitor_callback(self, callback, monitor_all: bool = False) -> None:
        """Call callback(name, array) for every operator output of each forward and backward
        (with monitor_all, also every input of an operator), as MXNet's executor does.

        Names follow MXNet: '<node>_output' (every output, hidden ones too), and with monitor_all
        an input is reported as the variable's own name (when it is one) then '<node>_<input>'.
        The name is a str that also has MXNet's bytes `.decode()`, so `py_str(name)` works; the
        array is a read-only NDArray copy (MXNet passes a handle to wrap), taken by an engine op
        right after its node, so it holds this run's values whatever later reuses the bytes."""
        if callback is not None and not callable(callback):
            raise TypeError("monitor callback must be callable")
        self._monitor = callback
        self._monitor_all = bool(monitor_all)

    def _run_monitored(self, lo: int, hi: int, is_train: bool) -> None:
        """Run nodes lo..hi-1 one engine op each, each followed by copies of what the monitor sees.

        The copies read the entry's vars right after its node, before any later node may reuse
        (or overwrite in place) the same bytes, so the callback gets this node's values."""
        nd = _nd()
        g, st = self._graph, self._storage
        self._refresh_steps()
        for step in range(lo, hi):
            n = g.nodes[step]
            if n.op is None:
                continue
            if self._monitor_all:
                names = n.op.input_names(n.parsed_attrs) + n.op.aux_names(n.parsed_attrs)
                for pos, (c, i) in enumerate(n.inputs):
                    copy = self._monitor_copy(c, i, nd, st)
                    if copy is None:
                        continue
                    if c.op is None:
                        self._monitor(_MonitorName(c.name), copy)
                    slot = names[pos] if pos < len(names) and n.op.name not in _UNNAMED_INPUTS else f"input{pos}"
                    self._monitor(_MonitorName(f"{n.name}_{slot}"), copy)
            self._push_segments([_Segment.of([self._runners[step]])], is_train)
            names = self._backward_names().get(id(n)) if step >= g.num_forward else None
            for i in range(n.num_outputs()):
                copy = self._monitor_copy(n, i, nd, st)
                if copy is not None:
                    self._monitor(_MonitorName(names[i] if names else n.output_name(i)), copy)

    def _backward_names(self) -> Dict[int, List[str]]:
        """MXNet's monitor names for backward outputs: '<forward node>_backward_output<i>' (no index
        for a single output), when a forward node's gradient is one backward node, as MXNet's is.
        The gradient pass names a node's backward nodes '<forward node>_...'; the longest forward
        name that prefixes a backward node's name is its forward node."""
        cached = getattr(self, "_bwd_names", None)
        if cached is not None:
            return cached
        g = self._graph
        fwd = {n.name for n in g.nodes[:g.num_forward] if n.op is not None}
        owner: Dict[str, list] = {}
        for n in g.nodes[g.num_forward:]:
            if n.op is None:
                continue
            parts = n.name.split("_")
            for cut in range(len(parts) - 1, 0, -1):
                if "_".join(parts[:cut]) in fwd:
                    owner.setdefault("_".join(parts[:cut]), []).append(n)
                    break
        self._bwd_names = {}
        for fname, nodes in owner.items():
            if len(nodes) == 1:
                k = nodes[0].num_outputs()
                self._bwd_names[id(nodes[0])] = ([f"{fname}_backward_output"] if k == 1 else
                                                 [f"{fname}_backward_output{i}" for i in range(k)])
        return self._bwd_names

    def _monitor_copy(self, c, i, nd, st):
        """An NDArray copy of entry (c, i) pushed now (None if the entry has no storage)."""
        key = (id(c), i)
        if c.op is None:
            arr = self._var_arrays.get(id(c))
            return arr.copy() if arr is not None else None
        if key in st.views:
            view, reads = st.views[key], list(st.vars[key])
        elif key in self._grad_target:
            return self._grad_target[key].copy()
        else:
            return None
        out = nd.empty(view.shape, ctx=self._ctx, dtype=view.dtype)

        def fn(out=out, view=view):
            out._data[...] = view
        engine.push(fn, read=reads, write=[out._chunk.var], device=self._ctx, name=f"monitor:{c.name}")
        return out

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False, **kwargs) -> "Executor":
        """A new executor for new input shapes that shares memory with this one (MXNet's semantics).

        Arrays whose shape is unchanged are shared; a smaller array is a view of the first
        elements of the old one (a smaller batch writes into this executor's arrays); a larger one
        is allocated anew, only with allow_up_sizing.  Shapes of arguments not named in kwargs may
        change only with partial_shaping.  The intermediates reuse this executor's storage, so the
        two must not run at the same time (the engine orders them if they do)."""
        nd = _nd()
        inputs = set(self._symbol.list_inputs())
        given = {k: tuple(int(d) for d in v) for k, v in kwargs.items()
                 if isinstance(v, tuple) and k in inputs}  # MXNet ignores other names and values
        arg_shapes, _, aux_shapes = self._symbol.infer_shape(**given)
        if arg_shapes is None:
            raise ShapeError(f"reshape: cannot infer every shape from {given}")

        def adapt(name, old, shape, what):
            shape = tuple(shape)
            if shape == tuple(old.shape):
                return old
            if not (partial_shaping or name in given):
                raise ShapeError(f"reshape: shape of unspecified {what} '{name}' changed from {tuple(old.shape)} "
                                 f"to {shape}; this can keep the new executor from sharing parameters with the "
                                 "old one. If this is intended, set partial_shaping=True")
            size = int(np.prod(shape, dtype=np.int64))
            if size > old.size:
                if not allow_up_sizing:
                    raise ShapeError(f"reshape: new shape {shape} of {what} '{name}' is larger than the original "
                                     f"{tuple(old.shape)}; making a big executor and then down sizing it is more "
                                     "efficient than the reverse. If you really want to up size, set "
                                     "allow_up_sizing=True to enable allocation of new arrays")
                return nd.zeros(shape, ctx=old.context, dtype=old.dtype)
            return old.reshape(-1)[0:size].reshape(shape)  # a view: same storage and engine var

        new_args, new_grads = [], []
        for name, shape, old, gold in zip(self._arg_names, arg_shapes, self.arg_arrays, self.grad_arrays):
            new_args.append(adapt(name, old, shape, "argument"))
            new_grads.append(adapt(name, gold, shape, "argument") if gold is not None else None)
        new_aux = [adapt(name, old, shape, "auxiliary state")
                   for name, shape, old in zip(self._aux_names, aux_shapes, self.aux_arrays)]
        grads = new_grads if any(gr is not None for gr in new_grads) else None
        exe = Executor(self._symbol, self._ctx, new_args, grads, dict(self._grad_req), new_aux,
                       group2ctx=self._group2ctx, shared_pool=self._storage.pool)
        if self._monitor is not None:
            exe.set_monitor_callback(self._monitor, self._monitor_all)
        return exe

    def get_optimized_symbol(self):
        """The forward graph this executor runs, as a new Symbol: the bound symbol after common
        subexpression elimination (ember/symbolic/cse.py); no other pass rewrites the graph."""
        from .symbol import Symbol
        return Symbol(self._run_heads)._deep_copy()

    # -- memory plan ----------------------------------------------------------------------
    def memory_stats(self) -> dict:
        """Planned bytes (total, per algorithm), liveness lower bound and the naive figure."""
        p = self._graph.plan
        return {"planned_bytes": p.total_bytes, "algorithm": p.placement.algorithm,
                "candidates": dict(p.placement.candidates), "lower_bound_bytes": p.lower_bound,
                "naive_bytes": p.naive_bytes, "num_nodes": len(self._graph.nodes),
                **self._graph.stats}

    def debug_str(self) -> str:
        """The graph with the storage of every entry and MXNet's 'Total N MB allocated' line."""
        g, p = self._graph, self._graph.plan
        pl = p.placement
        lines = ["Symbol Outputs:"]
        for i, (n, j) in enumerate(g.heads):
            lines.append(f"\toutput[{i}]={n.name}({j})")
        for step, n in enumerate(g.nodes):
            if n.op is None:
                lines.append(f"Variable:{n.name}")
                continue
            lines.append("--------------------")
            lines.append(f"Op:{n.op.name}, Name={n.name}" + (" (backward)" if step >= g.num_forward else ""))
            lines.append("Inputs:")
            for k, (c, j) in enumerate(n.inputs):
                lines.append(f"\targ[{k}]={c.name}({j})")
            if n.attrs:
                lines.append("Attrs:")
                for k, v in n.attrs.items():
                    lines.append(f"\t{k}={v}")
            for i in range(n.num_outputs()):
                key = (id(n), i)
                if key in g.external:
                    lines.append(f"\toutput[{i}]: grad array of '{g.external[key]}' (external)")
                    continue
                gid = p.group_of[key]
                shared = " inplace" if key in g.inplace else ""
                lines.append(f"\toutput[{i}]: storage_id={gid} block={pl.block[gid]} offset={pl.offset[gid]} "
                             f"bytes={p.sizes[gid]}{shared}")
        lines.append(f"Total {p.total_bytes >> 20} MB allocated")
        lines.append(f"Total {p.total_bytes} bytes allocated ({pl.algorithm}; candidates {pl.candidates}; "
                     f"liveness lower bound {p.lower_bound} bytes; naive {p.naive_bytes} bytes)")
        return "\n".join(lines) + "\n"


def _arg_contexts(symbol, ctx: Context, group2ctx) -> Dict[str, Context]:
    """The context of each input: its '__ctx_group__' mapped through group2ctx, else ctx."""
    if not group2ctx:
        return {}
    attrs = symbol.attr_dict()
    out = {}
    for name in symbol.list_inputs():
        group = attrs.get(name, {}).get("__ctx_group__")
        if group is not None and group in group2ctx:
            dev = group2ctx[group]
            if not isinstance(dev, Context):
                raise TypeError(f"simple_bind: group2ctx['{group}'] must be a Context, got {type(dev).__name__}")
            out[name] = dev
    return out


def simple_bind(symbol, ctx, grad_req="write", type_dict=None, shared_exec=None, shared_arg_names=None,
                shared_buffer=None, group2ctx=None, stype_dict=None, **shapes) -> Executor:
    """Allocate argument, gradient and aux arrays from the given input shapes, then bind.

    As MXNet: keywords that name no input are ignored; arguments in shared_arg_names take
    shared_exec's arrays (new ones when shape or dtype differ); other arguments are taken from
    shared_buffer (name -> NDArray, filled with what is allocated here) as views when the buffer
    holds enough elements; aux states are shared_exec's when their shapes agree; the executor's
    intermediates reuse shared_exec's storage.  group2ctx places each ctx_group's variables.
    Storage types as MXNet's: an argument's array has the storage type stype_dict gives it or its
    variable declares (`var(stype=...)`), a gradient array the one storage inference gives its
    gradient (Embedding(sparse_grad=True)'s weight: row_sparse; grad_req 'write' only)."""
    nd = _nd()
    ctx = ctx if ctx is not None else current_context()
    inputs = set(symbol.list_inputs())
    shapes = {k: v for k, v in shapes.items() if k in inputs}
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    if arg_shapes is None:
        partial, _, _ = symbol.infer_shape_partial(**shapes)
        missing = [n for n, s in zip(symbol.list_arguments(), partial) if not s or 0 in s]
        shown = missing[:10] + (["..."] if len(missing) > 10 else [])
        raise ShapeError(f"simple_bind: cannot infer the shapes of {shown}; give them as keyword shapes")
    types = {k: v for k, v in (type_dict or {}).items() if k in inputs}
    arg_types, _, aux_types = symbol.infer_type(**types)
    if arg_types is None:
        arg_types = [np.float32] * len(arg_shapes)
        aux_types = [np.float32] * len(aux_shapes)
    names = symbol.list_arguments()
    reqs = _grad_req_dict(grad_req, names)
    shared_names = set(shared_arg_names or ())
    where = _arg_contexts(symbol, ctx, group2ctx)

    def fresh(name, shape, dtype):
        return nd.zeros(shape, ctx=where.get(name, ctx), dtype=dtype)

    def from_shared_exec(pool, name, shape, dtype):
        old = pool.get(name)
        if old is not None and tuple(old.shape) == tuple(shape) and np.dtype(old.dtype) == np.dtype(dtype):
            return old
        return fresh(name, shape, dtype)  # MXNet allocates anew when the shared array does not fit

    def from_buffer(key, name, shape, dtype):
        if shared_buffer is None:
            return fresh(name, shape, dtype)
        size = int(np.prod(shape, dtype=np.int64))
        old = shared_buffer.get(key)
        if old is not None and np.dtype(old.dtype) == np.dtype(dtype) and old.size >= size:
            return old.reshape(-1)[0:size].reshape(shape)
        arr = fresh(name, shape, dtype)
        shared_buffer[key] = arr
        return arr

    declared = symbol.attr_dict()
    stypes = {n: (stype_dict or {}).get(n) or declared_stype(declared.get(n, {}).get("__storage_type__"))
              for n in names}
    for n, st in stypes.items():
        if st not in STYPE_IDS:
            raise ValueError(f"simple_bind: storage type of '{n}' must be one of {list(STYPE_IDS)}, got {st!r}")
    args, grads = [], []
    for n, shape, dtype in zip(names, arg_shapes, arg_types):
        want_grad = reqs[n] != "null"
        if n in shared_names and shared_exec is not None:
            old = shared_exec.arg_dict.get(n)
            if stypes[n] != "default" and (old is None or old.stype != stypes[n]):
                args.append(nd.zeros(shape, ctx=where.get(n, ctx), dtype=dtype, stype=stypes[n]))
            else:
                args.append(from_shared_exec(shared_exec.arg_dict, n, shape, dtype))
            grads.append(from_shared_exec(shared_exec.grad_dict, n, shape, dtype) if want_grad else None)
        elif stypes[n] != "default":
            args.append(nd.zeros(shape, ctx=where.get(n, ctx), dtype=dtype, stype=stypes[n]))
            grads.append(fresh(n, shape, dtype) if want_grad else None)
        elif n in shared_names:
            args.append(fresh(n, shape, dtype))
            grads.append(fresh(n, shape, dtype) if want_grad else None)
        else:
            args.append(from_buffer(n, n, shape, dtype))
            grads.append(from_buffer("grad of " + n, n, shape, dtype) if want_grad else None)
    shared_aux = shared_exec.aux_dict if shared_exec is not None else {}
    aux = [from_shared_exec(shared_aux, n, shape, dtype)
           for n, shape, dtype in zip(symbol.list_auxiliary_states(), aux_shapes, aux_types)]
    pool = shared_exec._storage.pool if shared_exec is not None else None
    exe = Executor(symbol, ctx, args, grads, reqs, aux, group2ctx=group2ctx, shared_pool=pool)
    exe._sparse_grads_as_inferred()
    return exe
