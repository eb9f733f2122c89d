"""Module: a symbol bound on one or several devices, with parameters, an optimizer and MXNet's API.

Each context gets an executor (DataParallelExecutorGroup) running its slice of every batch; the
executors' argument arrays are the parameters.  `update()` runs the optimizer's in-place update
ops (mx.nd sgd_update, ...) on them as engine ops ordered after the backward pass that wrote the
gradients: directly for one device, after summing the devices' gradients through a KVStore for
several, or on the store itself (update on kvstore) as MXNet's _create_kvstore decides.
"""
from __future__ import annotations

import logging
import os
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import initializer as init_mod
from .. import ndarray as nd
from .. import kvstore as kvs
from .. import model as model_mod
from .. import optimizer as opt_mod
from ..context import Context, cpu
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from .base_module import BaseModule, ModuleError, ParamsError
from .executor_group import DataParallelExecutorGroup


def _descs(shapes) -> List[DataDesc]:
    out = []
    for item in shapes or []:
        if isinstance(item, DataDesc):
            out.append(item)
        elif isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
            shape = item[1]
            if isinstance(shape, int):
                shape = (shape,)
            if not isinstance(shape, (list, tuple)) or not all(isinstance(d, (int, np.integer)) for d in shape):
                raise TypeError(f"the shape of '{item[0]}' must be a tuple of ints, got {type(shape).__name__} "
                                f"{shape!r}")
            out.append(DataDesc(item[0], tuple(int(d) for d in shape)))
        else:
            raise TypeError(f"shapes must be DataDesc or (name, shape) pairs, got {item!r}")
    return out


def _contexts(context) -> List[Context]:
    if context is None:
        return [cpu()]
    ctxs = list(context) if isinstance(context, (list, tuple)) else [context]
    if not ctxs:
        raise ModuleError("Module: context is an empty list")
    for c in ctxs:
        if not isinstance(c, Context):
            raise TypeError(f"Module: context must be an ember Context or a list of them, got {type(c).__name__}")
    return ctxs


def create_kvstore(kvstore, num_device: int, arg_params) -> Tuple[Optional[object], bool]:
    """(kvstore or None, update_on_kvstore) as MXNet's model._create_kvstore decides them.

    One device in one process needs no store; several devices sum their gradients through a
    'local'/'device' store; MXNET_UPDATE_ON_KVSTORE=0 (or a 'local' store with a parameter over
    16M elements) keeps the optimizer on the devices."""
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kvs.create(kvstore)  # still reject unknown names
            kv = None
        else:
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                biggest = max(int(np.prod(p.shape)) for p in arg_params.values())
                if biggest > 1024 * 1024 * 16:
                    update_on_kvstore = False
    elif isinstance(kvstore, kvs.KVStoreBase) or hasattr(kvstore, "push"):
        kv = kvstore
    else:
        raise TypeError(f"kvstore must be a KVStore, a name or None, got {type(kvstore).__name__}")
    if kv is None:
        return None, False
    if hasattr(kv, "is_capable"):
        update_on_kvstore = update_on_kvstore and kv.is_capable("optimizer")
    return kv, update_on_kvstore


class Module(BaseModule):
    """MXNet's mx.mod.Module: a symbol bound on one or several devices (data parallel).

    symbol: the network (its outputs are the module's outputs); data_names / label_names: the
    arguments fed from batches; context: a Context or a list (each batch is split over them in
    proportion to work_load_list, gradients are summed through a KVStore); fixed_param_names:
    parameters never updated; state_names: arguments set by the user, not learned; group2ctxs:
    ctx_group placement (a dict, or one dict per context).
    """

    def __init__(self, symbol, data_names: Sequence[str] = ("data",),
                 label_names: Optional[Sequence[str]] = ("softmax_label",), logger=logging, context=None,
                 work_load_list=None, fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        self._context = _contexts(context)
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise ModuleError(f"Module: work_load_list has {len(work_load_list)} entries for "
                              f"{len(self._context)} contexts")
        self._work_load_list = list(work_load_list)
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        data_names = list(data_names or [])
        label_names = list(label_names or [])
        state_names = list(state_names or [])
        fixed_param_names = list(fixed_param_names or [])
        arg_names = symbol.list_arguments()
        missing = [n for n in data_names + state_names if n not in arg_names]
        if missing:
            raise ModuleError(f"Module: {missing} are not arguments of the symbol ({arg_names[:20]})")
        for n in label_names:
            if n not in arg_names:
                warnings.warn(f"Module: label '{n}' is not an argument of the symbol; it will be ignored",
                              stacklevel=2)
        input_names = set(data_names + label_names + state_names)
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._fixed_param_names = fixed_param_names
        self._param_names = [n for n in arg_names if n not in input_names]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        unknown_fixed = [n for n in fixed_param_names if n not in self._param_names]
        if unknown_fixed:
            raise ModuleError(f"Module: fixed_param_names {unknown_fixed} are not parameters of the symbol")
        self._compression_params = compression_params
        self._exec_group: Optional[DataParallelExecutorGroup] = None
        self._data_shapes: List[DataDesc] = []
        self._label_shapes: List[DataDesc] = []
        self._arg_params: Optional[Dict] = None
        self._aux_params: Optional[Dict] = None
        self._params_dirty = False
        self._optimizer = None
        self._updater = None
        self._kvstore = None
        self._update_on_kvstore = False
        self._preload_opt_states: Optional[str] = None
        self._monitor = None
        self._grad_req = None

    # -- loading / saving ---------------------------------------------------------------------
    @staticmethod
    def load(prefix: str, epoch: int, load_optimizer_states: bool = False, **kwargs) -> "Module":
        """A Module from a checkpoint; bind it, then its parameters are set from the file."""
        sym, args, auxs = model_mod.load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params, mod._aux_params = args, auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix: str, epoch: int, save_optimizer_states: bool = False,
                        remove_amp_cast: bool = True) -> None:
        """Write prefix-symbol.json, prefix-%04d.params (and prefix-%04d.states)."""
        self._symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
        arg_params, aux_params = self.get_params()
        model_mod.save_params(prefix, epoch, arg_params, aux_params)
        if save_optimizer_states:
            self.save_optimizer_states("%s-%04d.states" % (prefix, epoch))

    # -- names and shapes -----------------------------------------------------------------------
    @property
    def data_names(self) -> List[str]:
        return list(self._data_names)

    @property
    def label_names(self) -> List[str]:
        return list(self._label_names)

    @property
    def output_names(self) -> List[str]:
        return list(self._output_names)

    @property
    def data_shapes(self) -> List[DataDesc]:
        self._require(what="data_shapes")
        return list(self._data_shapes)

    @property
    def label_shapes(self) -> List[DataDesc]:
        self._require(what="label_shapes")
        return list(self._label_shapes)

    @property
    def output_shapes(self) -> List[Tuple[str, Tuple[int, ...]]]:
        self._require(what="output_shapes")
        return self._exec_group.get_output_shapes()

    def _bound_batch_size(self) -> int:
        return self._exec_group.batch_size

    @property
    def _total_exec_bytes(self) -> int:
        return self._exec_group._total_exec_bytes if self._exec_group is not None else 0

    # -- bind -----------------------------------------------------------------------------------
    def _input_descs(self, data_shapes, label_shapes):
        arg_names = set(self._symbol.list_arguments())
        data_descs = _descs(data_shapes)
        names = [d.name for d in data_descs]
        if sorted(names) != sorted(self._data_names):
            raise ModuleError(f"bind: data shapes are given for {names}, the module's data_names are "
                              f"{self._data_names}")
        label_descs = [d for d in _descs(label_shapes) if d.name in arg_names]
        return data_descs, label_descs

    def bind(self, data_shapes, label_shapes=None, for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module=None, grad_req="write") -> None:
        """Bind one executor per context for these input shapes (a no-op when bound, unless forced)."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        data_descs, label_descs = self._input_descs(data_shapes, label_shapes)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        if not for_training and inputs_need_grad:
            raise ModuleError("bind: inputs_need_grad needs for_training=True")
        shared_group = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded and shared_module.params_initialized):
                raise ModuleError("bind: shared_module must be a bound Module with initialized parameters")
            shared_group = shared_module._exec_group
            if len(shared_group.execs) != len(self._context):
                raise ModuleError("bind: shared_module runs on a different number of contexts")
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, data_descs, label_descs or None, self._param_names,
            for_training, inputs_need_grad, shared_group, logger=self.logger,
            fixed_param_names=self._fixed_param_names, grad_req=grad_req, state_names=self._state_names,
            group2ctxs=self._group2ctxs)
        self._data_shapes, self._label_shapes = data_descs, label_descs
        self.binded = True
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized and self._arg_params is not None:
            # loaded (Module.load), given before bind or initialized before a rebind: put the values
            # into the new executors; the module's CPU copies are its own again (never the caller's arrays)
            self._exec_group.set_params(self._arg_params, self._aux_params or {}, allow_extra=True)
            self._arg_params = self._aux_params = None
            self._sync_params_from_devices()

    def _reset_bind(self) -> None:
        if self.params_initialized and self._exec_group is not None:
            self._sync_params_from_devices()
        self.binded = False
        self._exec_group = None
        self._data_shapes, self._label_shapes = [], []

    def reshape(self, data_shapes, label_shapes=None) -> None:
        """Reshape the executors for new input shapes, sharing parameters and memory."""
        self._require(what="reshape")
        data_descs, label_descs = self._input_descs(data_shapes, label_shapes)
        self._exec_group.reshape(data_descs, label_descs or None)
        self._data_shapes, self._label_shapes = data_descs, label_descs

    # -- parameters ------------------------------------------------------------------------------
    def _param_shapes(self):
        exe = self._exec_group.execs[0]
        return ({n: exe.arg_dict[n] for n in self._param_names}, {n: exe.aux_dict[n] for n in self._aux_names})

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing: bool = False, force_init: bool = False, allow_extra: bool = False) -> None:
        """Set parameters from arg_params/aux_params where given, else from the initializer."""
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. init_params call ignored.",
                          stacklevel=2)
            return
        self._require(what="init_params")
        if initializer is not None and not callable(initializer):
            initializer = init_mod.create(initializer)
        for given, names, what in ((arg_params, self._param_names, "arg_params"),
                                   (aux_params, self._aux_names, "aux_params")):
            if given and not allow_extra:
                extra = sorted(set(given) - set(names))
                if extra:
                    raise ParamsError(f"init_params: {what} has {extra[:10]}, which the module does not use "
                                      "(pass allow_extra=True to ignore them)")
        # the module's CPU copies (MXNet's _arg_params / _aux_params), copied to every device below
        self._arg_params, self._aux_params = self._new_param_copies()
        attrs = self._symbol.attr_dict()

        def fill(name, arr, cache):
            if cache is not None and name in cache:
                src = cache[name]
                if tuple(src.shape) != tuple(arr.shape):
                    raise ModuleError(f"init_params: '{name}' has shape {tuple(src.shape)}, the module "
                                      f"needs {tuple(arr.shape)}")
                if src is not arr:
                    arr[:] = src
                return
            if cache is not None and not allow_missing:
                raise ModuleError(f"init_params: '{name}' is not in the given parameters "
                                  "(pass allow_missing=True to initialize it)")
            if initializer is not None:
                initializer(InitDesc(name, attrs.get(name)), arr)
            elif cache is None:
                raise ModuleError(f"init_params: no value and no initializer for '{name}'")

        for name in self._param_names:
            fill(name, self._arg_params[name], arg_params)
        for name in self._aux_names:
            fill(name, self._aux_params[name], aux_params)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def set_params(self, arg_params, aux_params, allow_missing: bool = False, force_init: bool = True,
                   allow_extra: bool = False) -> None:
        """Assign parameter values; with allow_missing, parameters not given keep their current values."""
        if not self.binded:  # keep the values until bind
            self._arg_params, self._aux_params = dict(arg_params), dict(aux_params or {})
            self.params_initialized = True
            return
        if self._set_params_front(arg_params, aux_params, allow_missing, force_init, allow_extra):
            return
        try:
            self._exec_group.set_params(arg_params, aux_params or {}, allow_extra=allow_extra)
        except ValueError as e:
            raise ParamsError(f"set_params: {e} (pass allow_extra=True to ignore it)") from None
        self._params_dirty = True
        self.params_initialized = True

    def _new_param_copies(self) -> Tuple[Dict, Dict]:
        """Zero CPU arrays for the parameters and auxiliary states, each of the storage type its
        variable declares (`var(stype='row_sparse')`), as MXNet's module keeps them; the executors
        compute on dense arrays and are copied to and from these."""
        args_now, aux_now = self._param_shapes()
        attrs = self._symbol.attr_dict()

        def stype(name):
            code = attrs.get(name, {}).get("__storage_type__", "0")
            return {"1": "row_sparse", "2": "csr", "row_sparse": "row_sparse", "csr": "csr"}.get(code, "default")
        return ({n: nd.zeros(a.shape, dtype=a.dtype, stype=stype(n)) for n, a in args_now.items()},
                {n: nd.zeros(a.shape, dtype=a.dtype, stype=stype(n)) for n, a in aux_now.items()})

    def _sync_params_from_devices(self) -> None:
        """Copy the devices' current values (averaged) into the module's CPU copies."""
        if self._arg_params is None:
            self._arg_params, self._aux_params = self._new_param_copies()
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    def get_params(self) -> Tuple[Dict, Dict]:
        """Copies of the current (arg_params, aux_params) on the CPU (the device average)."""
        self._require(params=True, what="get_params")
        if self._exec_group is None:
            return dict(self._arg_params), dict(self._aux_params or {})
        self._sync_params_from_devices()
        return ({n: a.copy() for n, a in self._arg_params.items()},
                {n: a.copy() for n, a in self._aux_params.items()})

    def get_states(self, merge_multi_context: bool = True):
        """The state arrays ([[state_dev1, ...], ...] with merge_multi_context=False)."""
        self._require(params=True, what="get_states")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None) -> None:
        """Set the state arrays from per-device arrays or to one value."""
        self._require(params=True, what="set_states")
        self._exec_group.set_states(states, value)

    # -- optimizer ---------------------------------------------------------------------------------
    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """Create the optimizer (rescale_grad defaults to 1/batch_size), the KVStore and the updater."""
        self._require(params=True, what="init_optimizer")
        if self.optimizer_initialized and not force_init:
            warnings.warn("optimizer already initialized, ignoring...", stacklevel=2)
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kv, update_on_kvstore, batch_size, idx2name = self._optimizer_setting(kvstore)
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", 1.0 / batch_size)
            optimizer = opt_mod.create(optimizer, sym=self._symbol, param_idx2name=idx2name, **params)
        elif isinstance(optimizer, opt_mod.Optimizer):
            if optimizer.rescale_grad != 1.0 / batch_size:
                warnings.warn(f"optimizer.rescale_grad is {optimizer.rescale_grad}, not 1/batch_size "
                              f"({1.0 / batch_size}); is that intended?", stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name
                optimizer.set_lr_mult({})  # the symbol's __lr_mult__ / __wd_mult__, now that names are known
                optimizer.set_wd_mult(optimizer.wd_mult)
        else:
            raise TypeError(f"init_optimizer: optimizer must be a name or an Optimizer, got {type(optimizer).__name__}")
        self._optimizer = optimizer
        self._kvstore = kv
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kv is not None:
            if self._compression_params:
                kv.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kv.set_optimizer(optimizer)
            for name, devs in zip(self._exec_group.param_names, self._exec_group.param_arrays):
                kv.init(name, self._arg_params[name])
                if update_on_kvstore:
                    kv.pull(name, out=devs, priority=0)
        if not update_on_kvstore:
            self._updater = opt_mod.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def _optimizer_setting(self, kvstore) -> Tuple[Optional[object], bool, int, Dict[int, str]]:
        """(KVStore or None, update_on_kvstore, the batch size over all workers, the optimizer's index ->
        parameter name map: one index per parameter, or per parameter and device without update on
        the store), as MXNet's module decides them."""
        num_device = len(self._context)
        kv, update_on_kvstore = create_kvstore(kvstore, num_device, self._arg_params)
        batch_size = self._exec_group.batch_size
        if kv is not None and "dist" in kv.type and "_sync" in kv.type:
            batch_size *= kv.num_workers
        names = self._exec_group.param_names
        if update_on_kvstore:
            return kv, update_on_kvstore, batch_size, dict(enumerate(names))
        return kv, update_on_kvstore, batch_size, {i * num_device + k: n for i, n in enumerate(names)
                                                   for k in range(num_device)}

    def borrow_optimizer(self, shared_module) -> None:
        """Use shared_module's optimizer, updater and KVStore (BucketingModule's buckets)."""
        if not shared_module.optimizer_initialized:
            raise ModuleError("borrow_optimizer: the shared module has no optimizer yet")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname: str) -> None:
        """Write the optimizer states (updater or kvstore) to `fname`."""
        self._require(optimizer=True, what="save_optimizer_states")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            with open(fname, "wb") as f:
                f.write(self._updater.get_states())

    def load_optimizer_states(self, fname: str) -> None:
        """Restore optimizer states written by save_optimizer_states."""
        self._require(optimizer=True, what="load_optimizer_states")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, "rb") as f:
                self._updater.set_states(f.read())

    # -- computation ----------------------------------------------------------------------------------
    def forward(self, data_batch, is_train: Optional[bool] = None) -> None:
        """Feed the batch's data (and labels), split over the devices, and run forward
        (reshaping first when the batch's shapes differ from the bound ones)."""
        self._require(params=True, what="forward")
        if isinstance(data_batch, list):
            raise ModuleError("forward: pass one DataBatch (pre-sliced lists are not supported)")
        data = list(data_batch.data)
        if len(data) != len(self._data_names):
            raise ModuleError(f"forward: batch has {len(data)} data arrays, the module expects "
                              f"{len(self._data_names)} ({self._data_names})")
        new_data = [tuple(a.shape) for a in data]
        labels = list(getattr(data_batch, "label", None) or [])
        if new_data != [tuple(d.shape) for d in self._data_shapes] or (
                labels and self._label_shapes and
                [tuple(a.shape) for a in labels[:len(self._label_shapes)]] != [tuple(d.shape) for d in self._label_shapes]):
            provided = _descs(getattr(data_batch, "provide_data", None) or [])
            if sorted(d.name for d in provided) != sorted(self._data_names):
                # no description, or one named by an iterator that does not know the module's names
                provided = [DataDesc(d.name, s, d.dtype, d.layout) for d, s in zip(self._data_shapes, new_data)]
            descs = provided
            if labels and self._label_shapes:
                ldescs = [DataDesc(d.name, tuple(a.shape), d.dtype, d.layout)
                          for d, a in zip(self._label_shapes, labels)]
            else:
                ldescs = list(self._label_shapes)
            self.reshape(descs, ldescs)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None) -> None:
        """Run the backward pass on every device."""
        self._require(params=True, what="backward")
        if not self.for_training:
            raise ModuleError("backward: the module was bound with for_training=False")
        self._exec_group.backward(out_grads=out_grads)

    def update(self) -> None:
        """Sum the devices' gradients (KVStore) and apply the optimizer to every trainable parameter."""
        self._require(params=True, optimizer=True, what="update")
        group = self._exec_group
        if group.grad_arrays is None:
            raise ModuleError("update: the module was bound with for_training=False (no gradients)")
        self._params_dirty = True
        num_device = len(self._context)
        for i, (name, weights, grads) in enumerate(zip(group.param_names, group.param_arrays, group.grad_arrays)):
            if grads[0] is None:
                continue
            if self._update_on_kvstore:
                self._kvstore.push(name, grads, priority=-i)
                self._kvstore.pull(name, out=weights, priority=-i)
                continue
            if self._kvstore is not None:
                self._kvstore.pushpull(name, grads, priority=-i)
            for k, (w, g) in enumerate(zip(weights, grads)):
                self._updater(i * num_device + k, g, w)

    def get_outputs(self, merge_multi_context: bool = True) -> List:
        """The outputs of the last forward: merged over devices, or [[out_dev1, out_dev2], ...]."""
        self._require(params=True, what="get_outputs")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True) -> List:
        """Gradients of the data inputs (bind with inputs_need_grad=True)."""
        self._require(params=True, what="get_input_grads")
        if not self.inputs_need_grad:
            raise ModuleError("get_input_grads: bind with inputs_need_grad=True")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced: bool = False) -> None:
        """Update `eval_metric` with the last outputs against `labels` (device by device)."""
        self._exec_group.update_metric(eval_metric, labels or [], pre_sliced)

    def install_monitor(self, mon) -> None:
        """Install a Monitor on every executor."""
        self._require(what="install_monitor")
        self._monitor = mon
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch, sparse_row_id_fn=None) -> None:
        """Nothing to prepare for dense parameters (MXNet pulls sparse rows here)."""
        self._require(what="prepare")

    def debug_str(self) -> str:
        """The first executor's graph and memory plan (ends with the total allocated)."""
        self._require(what="debug_str")
        return self._exec_group.execs[0].debug_str()
