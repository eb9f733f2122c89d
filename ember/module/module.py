"""Module: a symbol bound to one device with parameters, an optimizer and MXNet's training API.

The executor's argument arrays are the parameters: `update()` runs the
optimizer's in-place update ops (mx.nd sgd_update, ...) directly on them, as
engine ops ordered after the backward pass that wrote the gradients, so no
kvstore is needed locally.  A KVStore object or a 'dist_*' kvstore name makes
updates go through the store instead (update on kvstore).
"""
from __future__ import annotations

import logging
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

from .. import initializer as init_mod
from .. import kvstore as kvs
from .. import model as model_mod
from .. import optimizer as opt_mod
from ..context import Context, cpu
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from .base_module import BaseModule, ModuleError


def _descs(shapes) -> List[DataDesc]:
    out = []
    for item in shapes or []:
        if isinstance(item, DataDesc):
            out.append(item)
        elif isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
            out.append(DataDesc(item[0], tuple(item[1])))
        else:
            raise TypeError(f"shapes must be DataDesc or (name, shape) pairs, got {item!r}")
    return out


def _one_context(context) -> Context:
    if context is None:
        return cpu()
    if isinstance(context, (list, tuple)):
        if len(context) != 1:
            raise ModuleError(f"Module: ember binds one device per Module, got {len(context)} contexts "
                              "(use a kvstore across processes for data parallelism)")
        context = context[0]
    if not isinstance(context, Context):
        raise TypeError(f"Module: context must be an ember Context, got {type(context).__name__}")
    return context


class Module(BaseModule):
    """MXNet's mx.mod.Module on one device.

    symbol: the network (its outputs are the module's outputs).  data_names /
    label_names: the symbol arguments fed from batches; fixed_param_names: params
    that are never updated; state_names: arguments set by the user, not learned.
    """

    def __init__(self, symbol, data_names: Sequence[str] = ("data",),
                 label_names: Optional[Sequence[str]] = ("softmax_label",), logger=logging, context=None,
                 work_load_list=None, fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        self._context = _one_context(context)
        self._symbol = symbol
        data_names = list(data_names or [])
        label_names = list(label_names or [])
        state_names = list(state_names or [])
        fixed_param_names = list(fixed_param_names or [])
        arg_names = symbol.list_arguments()
        missing = [n for n in data_names + state_names if n not in arg_names]
        if missing:
            raise ModuleError(f"Module: {missing} are not arguments of the symbol ({arg_names})")
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
        self._exec = None
        self._data_shapes: List[DataDesc] = []
        self._label_shapes: List[DataDesc] = []
        self._arg_params: Optional[Dict] = None
        self._aux_params: Optional[Dict] = None
        self._optimizer = None
        self._updater = None
        self._kvstore = None
        self._update_on_kvstore = False
        self._preload_opt_states: Optional[str] = None
        self._monitor = None

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
        return [(n, tuple(o.shape)) for n, o in zip(self._output_names, self._exec.outputs)]

    def _bound_batch_size(self) -> int:
        desc = self._data_shapes[0]
        return desc.shape[DataDesc.get_batch_axis(getattr(desc, "layout", None))]

    # -- bind -----------------------------------------------------------------------------------
    def _input_shapes(self, data_shapes, label_shapes) -> Dict[str, Tuple[int, ...]]:
        arg_names = set(self._symbol.list_arguments())
        data_descs = _descs(data_shapes)
        names = [d.name for d in data_descs]
        if sorted(names) != sorted(self._data_names):
            raise ModuleError(f"bind: data shapes are given for {names}, the module's data_names are "
                              f"{self._data_names}")
        label_descs = [d for d in _descs(label_shapes) if d.name in arg_names]
        self._data_shapes, self._label_shapes = data_descs, label_descs
        return {d.name: tuple(d.shape) for d in data_descs + label_descs}

    def bind(self, data_shapes, label_shapes=None, for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module=None, grad_req="write") -> None:
        """Allocate the executor for these input shapes (a no-op when already bound, unless forced)."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        shapes = self._input_shapes(data_shapes, label_shapes)
        reqs = {}
        for name in self._symbol.list_arguments():
            if name in self._param_names:
                trainable = for_training and name not in self._fixed_param_names
                reqs[name] = (grad_req if isinstance(grad_req, str) else grad_req.get(name, "write")) \
                    if trainable else "null"
            elif name in self._data_names:
                reqs[name] = "write" if (for_training and inputs_need_grad) else "null"
            else:
                reqs[name] = "null"
        types = {d.name: d.dtype for d in self._data_shapes + self._label_shapes if d.dtype is not None}
        shared_exec = shared_module._exec if shared_module is not None else None
        self._exec = self._symbol.simple_bind(self._context, grad_req=reqs, type_dict=types,
                                              shared_exec=shared_exec, **shapes)
        self.binded = True
        if shared_module is not None and shared_module.params_initialized:
            self.params_initialized = True
        elif self.params_initialized and self._arg_params is not None:
            # loaded (Module.load) or initialized before a rebind: put the values into the new executor
            self._exec.copy_params_from(self._arg_params, self._aux_params, allow_extra_params=True)

    def _reset_bind(self) -> None:
        if self.params_initialized and self._exec is not None:
            self._arg_params, self._aux_params = self.get_params()
        self.binded = False
        self._exec = None

    def reshape(self, data_shapes, label_shapes=None) -> None:
        """Re-bind for new input shapes, keeping parameters (and gradients where shapes agree)."""
        self._require(what="reshape")
        shapes = self._input_shapes(data_shapes, label_shapes)
        self._exec = self._exec.reshape(partial_shaping=True, allow_up_sizing=True, **shapes)

    # -- parameters ------------------------------------------------------------------------------
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
                    raise ModuleError(f"init_params: {what} has {extra}, which the module does not use "
                                      "(pass allow_extra=True to ignore them)")
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
            if initializer is None:
                raise ModuleError(f"init_params: no value and no initializer for '{name}'")
            initializer(InitDesc(name, attrs.get(name)), arr)

        for name in self._param_names:
            fill(name, self._exec.arg_dict[name], arg_params)
        for name in self._aux_names:
            fill(name, self._exec.aux_dict[name], aux_params)
        self.params_initialized = True
        self._arg_params = self._aux_params = None  # the executor's arrays hold the values now

    def set_params(self, arg_params, aux_params, allow_missing: bool = False, force_init: bool = True,
                   allow_extra: bool = False) -> None:
        """Assign parameter values (all of them unless allow_missing)."""
        if not self.binded:  # MXNet allows set_params before bind only through init; keep the values
            self._arg_params, self._aux_params = dict(arg_params), dict(aux_params or {})
            self.params_initialized = True
            return
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)

    def get_params(self) -> Tuple[Dict, Dict]:
        """Copies of the current (arg_params, aux_params) on the CPU."""
        self._require(params=True, what="get_params")
        if self._exec is None:
            return dict(self._arg_params), dict(self._aux_params or {})
        args = {n: self._exec.arg_dict[n].copyto(cpu()) for n in self._param_names}
        aux = {n: self._exec.aux_dict[n].copyto(cpu()) for n in self._aux_names}
        return args, aux

    # -- optimizer ---------------------------------------------------------------------------------
    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """Create the optimizer (rescale_grad defaults to 1/batch_size) and its updater or kvstore."""
        self._require(params=True, what="init_optimizer")
        if self.optimizer_initialized and not force_init:
            warnings.warn("optimizer already initialized, ignoring...", stacklevel=2)
            return
        kv = self._make_kvstore(kvstore)
        batch_size = self._bound_batch_size()
        if kv is not None and "dist" in kv.type and "_sync" in kv.type:
            batch_size *= kv.num_workers
        idx2name = {i: n for i, n in enumerate(self._param_names)}
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
                optimizer.set_wd_mult(optimizer.wd_mult)  # wd_mult 0 for biases, now that names are known
        else:
            raise TypeError(f"init_optimizer: optimizer must be a name or an Optimizer, got {type(optimizer).__name__}")
        self._optimizer = optimizer
        self._kvstore = kv
        self._update_on_kvstore = kv is not None
        self._updater = None
        if kv is not None:
            kv.set_optimizer(optimizer)
            for i, name in enumerate(self._param_names):
                kv.init(i, self._exec.arg_dict[name])
        else:
            self._updater = opt_mod.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    @staticmethod
    def _make_kvstore(kvstore):
        # one device in one process: a local store adds nothing, update in place (MXNet does the same)
        if kvstore is None or (isinstance(kvstore, str) and "dist" not in kvstore):
            if isinstance(kvstore, str):
                kvs.create(kvstore)  # still reject unknown names
            return None
        if isinstance(kvstore, str):
            return kvs.create(kvstore)
        if isinstance(kvstore, kvs.KVStore) or hasattr(kvstore, "push"):
            return kvstore
        raise TypeError(f"kvstore must be a name or a KVStore, got {type(kvstore).__name__}")

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
        """Feed the batch's data (and labels) and run the forward pass."""
        self._require(params=True, what="forward")
        if is_train is None:
            is_train = self.for_training
        data = list(data_batch.data)
        if len(data) != len(self._data_names):
            raise ModuleError(f"forward: batch has {len(data)} data arrays, the module expects "
                              f"{len(self._data_names)} ({self._data_names})")
        feed = dict(zip([d.name for d in self._data_shapes], data))
        if self._label_shapes and data_batch.label:
            feed.update(zip([d.name for d in self._label_shapes], data_batch.label))
        new_shapes = {k: tuple(v.shape) for k, v in feed.items()}
        if any(tuple(self._exec.arg_dict[k].shape) != s for k, s in new_shapes.items()):
            self.reshape([DataDesc(d.name, new_shapes[d.name], d.dtype, d.layout) for d in self._data_shapes],
                         [DataDesc(d.name, new_shapes.get(d.name, d.shape), d.dtype, d.layout)
                          for d in self._label_shapes])
        self._exec.forward(is_train=is_train, **feed)

    def backward(self, out_grads=None) -> None:
        """Run the backward pass (gradients land in the executor's grad arrays)."""
        self._require(params=True, what="backward")
        if not self.for_training:
            raise ModuleError("backward: the module was bound with for_training=False")
        self._exec.backward(out_grads=out_grads)

    def update(self) -> None:
        """Apply the optimizer to every trainable parameter, in place."""
        self._require(params=True, optimizer=True, what="update")
        for i, name in enumerate(self._param_names):
            grad = self._exec.grad_dict.get(name)
            if grad is None or self._exec.grad_req.get(name, "null") == "null":
                continue
            weight = self._exec.arg_dict[name]
            if self._update_on_kvstore:
                self._kvstore.push(i, grad, priority=-i)
                self._kvstore.pull(i, out=weight, priority=-i)
            else:
                self._updater(i, grad, weight)

    def get_outputs(self, merge_multi_context: bool = True) -> List:
        """The outputs of the last forward (the executor's arrays, overwritten by the next forward)."""
        self._require(params=True, what="get_outputs")
        return list(self._exec.outputs) if merge_multi_context else [[o] for o in self._exec.outputs]

    def get_input_grads(self, merge_multi_context: bool = True) -> List:
        """Gradients of the data inputs (bind with inputs_need_grad=True)."""
        self._require(params=True, what="get_input_grads")
        if not self.inputs_need_grad:
            raise ModuleError("get_input_grads: bind with inputs_need_grad=True")
        grads = [self._exec.grad_dict[n] for n in self._data_names]
        return grads if merge_multi_context else [[g] for g in grads]

    def update_metric(self, eval_metric, labels, pre_sliced: bool = False) -> None:
        """Update `eval_metric` with the last outputs against `labels`."""
        labels = labels or []
        eval_metric.update_dict(dict(zip(self._label_names, labels)),
                                dict(zip(self._output_names, self._exec.outputs)))

    def install_monitor(self, mon) -> None:
        self._require(what="install_monitor")
        self._monitor = mon
        mon.install(self._exec)

    def debug_str(self) -> str:
        """The bound executor's graph and memory plan (ends with the total allocated)."""
        self._require(what="debug_str")
        return self._exec.debug_str()
