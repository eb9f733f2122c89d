"""BucketingModule: one Module per bucket key (e.g. sequence length), all sharing parameters and memory.

`sym_gen(bucket_key)` returns (symbol, data_names, label_names).  The module of
`default_bucket_key` is bound first; every other bucket's module is bound with it as
`shared_module`, so its executors take the default bucket's parameter and gradient arrays,
data buffers, optimizer and storage (executors of all buckets reuse one memory pool:
bind the largest bucket as the default so the others fit in its memory).
"""
from __future__ import annotations

import logging
import warnings
from typing import Callable, Dict, Optional

from .. import model as model_mod
from ..initializer import Uniform
from ..symbolic.naming import NameManager
from .base_module import BaseModule, ModuleError
from .module import Module


class BucketingModule(BaseModule):
    """MXNet's mx.mod.BucketingModule (sym_gen, default_bucket_key, context, ... as Module's)."""

    def __init__(self, sym_gen: Callable, default_bucket_key=None, logger=logging, context=None,
                 work_load_list=None, fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ModuleError("BucketingModule: default_bucket_key is required")
        if not callable(sym_gen):
            raise TypeError(f"BucketingModule: sym_gen must be callable, got {type(sym_gen).__name__}")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        self._check_names(symbol, data_names, label_names, state_names, fixed_param_names)
        self._fixed_param_names = fixed_param_names
        self._state_names = state_names
        self._context = context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._compression_params = compression_params
        self._buckets: Dict[object, Module] = {}
        self._curr_module: Optional[Module] = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None
        self._pending_params = None

    def _call_sym_gen(self, key):
        with NameManager():  # a fresh counter per call, so every bucket names its nodes alike (MXNet)
            res = self._sym_gen(key)
        if not (isinstance(res, tuple) and len(res) == 3):
            raise ModuleError(f"BucketingModule: sym_gen({key!r}) must return (symbol, data_names, label_names)")
        symbol, data_names, label_names = res
        return symbol, list(data_names or []), list(label_names or [])

    @staticmethod
    def _check_names(symbol, data_names, label_names, state_names, fixed_param_names) -> None:
        args = symbol.list_arguments()
        missing = [n for n in data_names + list(state_names or []) if n not in args]
        if missing:
            raise ModuleError(f"BucketingModule: {missing} are not arguments of the default bucket's symbol")
        for n in label_names:
            if n not in args:
                warnings.warn(f"BucketingModule: label '{n}' is not an argument of the symbol", stacklevel=3)

    def _reset_bind(self) -> None:
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def _new_module(self, key) -> Module:
        symbol, data_names, label_names = self._call_sym_gen(key)
        return Module(symbol, data_names, label_names, logger=self.logger, context=self._context,
                      work_load_list=self._work_load_list, fixed_param_names=self._fixed_param_names,
                      state_names=self._state_names, group2ctxs=self._group2ctxs,
                      compression_params=self._compression_params)

    # -- names and shapes ----------------------------------------------------------------------
    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        self._require(what="data_shapes")
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        self._require(what="label_shapes")
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        self._require(what="output_shapes")
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        """The current bucket's symbol."""
        self._require(what="symbol")
        return self._curr_module.symbol

    def _bound_batch_size(self) -> int:
        return self._curr_module._bound_batch_size()

    # -- parameters ------------------------------------------------------------------------------
    def get_params(self):
        """(arg_params, aux_params) of the shared parameters."""
        self._require(params=True, what="get_params")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing: bool = False, force_init: bool = True,
                   allow_extra: bool = False) -> None:
        """Assign parameter values (shared by every bucket)."""
        if self._set_params_front(arg_params, aux_params, allow_missing, force_init, allow_extra):
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing, force_init=force_init,
                                     allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing: bool = False,
                    force_init: bool = False, allow_extra: bool = False) -> None:
        """Initialize the shared parameters (through the current bucket's module)."""
        if self.params_initialized and not force_init:
            return
        self._require(what="init_params")
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                                      allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context: bool = True):
        self._require(params=True, what="get_states")
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None) -> None:
        self._require(params=True, what="set_states")
        self._curr_module.set_states(states, value)

    # -- binding -----------------------------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module=None, grad_req="write") -> None:
        """Bind the default bucket's module (the others are bound on first use, sharing with it)."""
        restore = None
        if self._pending_params is not None:
            restore = self._pending_params
        elif self.params_initialized and self.binded and force_rebind:
            restore = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise ModuleError("BucketingModule.bind: shared_module is not supported (buckets share among themselves)")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.binded = True
        self._grad_req = grad_req
        module = self._new_module(self._default_bucket_key)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind=False,
                    shared_module=None, grad_req=grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        if restore is not None:
            self.set_params(*restore)
            self._pending_params = None

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None) -> None:
        """Make `bucket_key` current, binding its module (sharing with the default bucket) on first use."""
        self._require(what="switch_bucket")
        if bucket_key not in self._buckets:
            module = self._new_module(bucket_key)
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key], grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        self._curr_module = self._buckets[bucket_key]
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """Create the optimizer once; every bucket borrows it."""
        self._require(params=True, what="init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for module in self._buckets.values():
            if module is not self._curr_module:
                module.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    def prepare(self, data_batch, sparse_row_id_fn=None) -> None:
        """Bind the batch's bucket if needed (without switching to it)."""
        self._require(params=True, what="prepare")
        key = getattr(data_batch, "bucket_key", None)
        if key is None:
            return
        original = self._curr_bucket_key
        self.switch_bucket(key, data_batch.provide_data, data_batch.provide_label)
        self.switch_bucket(original, None, None)

    # -- computation ----------------------------------------------------------------------------------
    def forward(self, data_batch, is_train: Optional[bool] = None) -> None:
        """Switch to the batch's bucket (bucket_key, provide_data / provide_label) and run forward."""
        self._require(params=True, what="forward")
        key = getattr(data_batch, "bucket_key", None)
        if key is None:
            key = self._curr_bucket_key
        provide_data = getattr(data_batch, "provide_data", None)
        provide_label = getattr(data_batch, "provide_label", None)
        if key not in self._buckets and provide_data is None:
            raise ModuleError(f"forward: bucket {key!r} is not bound; the batch must carry provide_data")
        self.switch_bucket(key, provide_data, provide_label)
        if self.optimizer_initialized and not self._curr_module.optimizer_initialized:
            self._curr_module.borrow_optimizer(self._buckets[self._default_bucket_key])
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None) -> None:
        self._require(params=True, what="backward")
        self._curr_module.backward(out_grads=out_grads)

    def update(self) -> None:
        """Update the shared parameters with the current bucket's gradients."""
        self._require(params=True, optimizer=True, what="update")
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context: bool = True):
        self._require(params=True, what="get_outputs")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True):
        self._require(params=True, what="get_input_grads")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced: bool = False) -> None:
        self._require(params=True, what="update_metric")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon) -> None:
        """Install a monitor on every bucket's executors (and on buckets bound later)."""
        self._require(what="install_monitor")
        self._monitor = mon
        for module in self._buckets.values():
            module.install_monitor(mon)

    # -- checkpoints ---------------------------------------------------------------------------------
    def save_checkpoint(self, prefix: str, epoch: int, remove_amp_cast: bool = False) -> None:
        """Write the default bucket's symbol and the shared parameters."""
        self._buckets[self._default_bucket_key].save_checkpoint(prefix, epoch, remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix: str, epoch: int, sym_gen=None, default_bucket_key=None, **kwargs) -> "BucketingModule":
        """A BucketingModule whose parameters come from a checkpoint (bind it next)."""
        if sym_gen is None or default_bucket_key is None:
            raise ModuleError("BucketingModule.load: sym_gen and default_bucket_key are required")
        _, arg_params, aux_params = model_mod.load_checkpoint(prefix, epoch)
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        mod._pending_params = (arg_params, aux_params)  # set on the default bucket at bind
        mod.params_initialized = True
        return mod
