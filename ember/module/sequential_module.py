"""SequentialModule: modules chained so that each one's outputs are the next one's data.

`add(module, take_labels=False, auto_wiring=False)`: modules with take_labels get the batch's
labels (and update the metric); with auto_wiring the previous module's outputs are renamed to
this module's data_names.  Backward runs the chain in reverse, each module's input gradients
being the previous module's head gradients, so every module after the first is bound with
inputs_need_grad when training.
"""
from __future__ import annotations

import copy
import logging
from typing import List, Optional

from ..initializer import Uniform
from ..io import DataBatch, DataDesc
from .base_module import BaseModule, ModuleError


class SequentialModule(BaseModule):
    """MXNet's mx.mod.SequentialModule."""

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules: List[BaseModule] = []
        self._metas: List[dict] = []
        self._label_shapes = None
        self._data_shapes = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module: BaseModule, **kwargs) -> "SequentialModule":
        """Append a module (meta keywords: take_labels, auto_wiring); returns self for chaining."""
        unknown = set(kwargs) - self._meta_keys
        if unknown:
            raise ValueError(f"SequentialModule.add: unknown meta {sorted(unknown)} "
                             f"(known: {sorted(self._meta_keys)})")
        self._modules.append(module)
        self._metas.append(kwargs)
        # adding a module invalidates what was bound or initialized
        self.binded = self.params_initialized = self.optimizer_initialized = False
        return self

    # -- names and shapes ---------------------------------------------------------------------
    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        self._require(what="data_shapes")
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        self._require(what="label_shapes")
        return self._label_shapes

    @property
    def output_shapes(self):
        self._require(what="output_shapes")
        return self._modules[-1].output_shapes

    @property
    def symbol(self):
        return self._modules[-1].symbol if self._modules else None

    def _bound_batch_size(self) -> int:
        return self._modules[0]._bound_batch_size()

    # -- parameters --------------------------------------------------------------------------------
    def get_params(self):
        """The parameters of every module, merged into one (arg_params, aux_params)."""
        self._require(params=True, what="get_params")
        arg_params, aux_params = {}, {}
        for module in self._modules:
            args, auxs = module.get_params()
            arg_params.update(args)
            aux_params.update(auxs)
        return arg_params, aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None, allow_missing: bool = False,
                    force_init: bool = False, allow_extra: bool = False) -> None:
        """Initialize every module (each takes the values it knows from arg_params / aux_params)."""
        if self.params_initialized and not force_init:
            return
        self._require(what="init_params")
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                               allow_missing=allow_missing, force_init=force_init, allow_extra=True)
        seen = {}
        for i, module in enumerate(self._modules):
            args, auxs = module.get_params()
            for name in list(args) + list(auxs):
                if name in seen:
                    raise ModuleError(f"SequentialModule: parameter '{name}' is in module {seen[name]} and "
                                      f"module {i}; names must be unique")
                seen[name] = i
        self.params_initialized = True

    # -- binding -------------------------------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module=None, grad_req="write") -> None:
        """Bind each module on the previous one's output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise ModuleError("bind: inputs_need_grad needs for_training=True")
        if shared_module is not None:
            raise ModuleError("SequentialModule.bind: shared_module is not supported")
        if not self._modules:
            raise ModuleError("SequentialModule.bind: add modules first")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._label_shapes = label_shapes
        shapes = data_shapes
        any_labels = False
        for i, (module, meta) in enumerate(zip(self._modules, self._metas)):
            takes = bool(meta.get(self.META_TAKE_LABELS, False))
            any_labels |= takes
            module.bind(shapes, label_shapes if takes else None, for_training,
                        inputs_need_grad=inputs_need_grad if i == 0 else for_training,
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            out = module.output_shapes
            if i + 1 < len(self._modules) and self._metas[i + 1].get(self.META_AUTO_WIRING, False):
                names = self._modules[i + 1].data_names
                if len(names) != len(out):
                    raise ModuleError(f"SequentialModule: module {i} has {len(out)} outputs, module {i + 1} "
                                      f"takes {len(names)} data inputs")
                out = [(n, s) for n, (_, s) in zip(names, out)]
            shapes = [DataDesc(n, s) for n, s in out]
        if not any_labels:
            self._label_shapes = None
        self.binded = True

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """One optimizer per module (each gets a copy when an Optimizer object is given)."""
        self._require(params=True, what="init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            opt = optimizer if isinstance(optimizer, str) else copy.deepcopy(optimizer)
            module.init_optimizer(kvstore=kvstore, optimizer=opt, optimizer_params=optimizer_params,
                                  force_init=force_init)
        self.optimizer_initialized = True

    # -- computation -------------------------------------------------------------------------------------
    def forward(self, data_batch, is_train: Optional[bool] = None) -> None:
        """Run the chain: each module's outputs are the next one's data (labels as the batch's)."""
        self._require(params=True, what="forward")
        batch = data_batch
        for i, module in enumerate(self._modules):
            module.forward(batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            batch = DataBatch(data=module.get_outputs(), label=getattr(data_batch, "label", None),
                              pad=getattr(data_batch, "pad", None))

    def backward(self, out_grads=None) -> None:
        """Backward through the chain in reverse."""
        self._require(params=True, what="backward")
        for i in range(len(self._modules) - 1, -1, -1):
            module = self._modules[i]
            module.backward(out_grads=out_grads)
            if i == 0:
                break
            out_grads = module.get_input_grads()

    def update(self) -> None:
        self._require(params=True, optimizer=True, what="update")
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context: bool = True):
        self._require(params=True, what="get_outputs")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context: bool = True):
        self._require(params=True, what="get_input_grads")
        if not self.inputs_need_grad:
            raise ModuleError("get_input_grads: bind with inputs_need_grad=True")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced: bool = False) -> None:
        """Update the metric with the outputs of every module that takes labels."""
        self._require(params=True, what="update_metric")
        for module, meta in zip(self._modules, self._metas):
            if meta.get(self.META_TAKE_LABELS, False):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon) -> None:
        self._require(what="install_monitor")
        for module in self._modules:
            module.install_monitor(mon)
