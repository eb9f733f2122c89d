"""SVRGModule: MXNet's `mx.contrib.svrg_optimization.svrg_module.SVRGModule` on ember's Module.

SVRG (Johnson & Zhang, 2013) keeps a snapshot w~ of the weights and mu, the mean over the whole
training set of the batch gradients at w~.  Each minibatch step then uses
    g_i(w) - g_i(w~) + mu
an unbiased gradient whose variance shrinks as w approaches w~.  The snapshot lives in a second
Module (`_mod_aux`) bound like this one; `update_full_grads` copies the current weights into it
and recomputes mu (`_param_dict`, one dict per device), which `fit` does every `update_freq`
epochs.
"""
from __future__ import annotations

import logging
import warnings
from typing import Dict, List, Optional

from ... import ndarray as nd
from ...base import ArgumentError
from ...module.module import Module
from ... import optimizer as opt_mod
from .svrg_optimizer import FULL_SUFFIX, _SVRGOptimizer


def _check_update_freq(update_freq) -> int:
    # bool is an int subclass, but update_freq=True is a mistake, not "every epoch"
    if not isinstance(update_freq, int) or isinstance(update_freq, bool):
        raise TypeError("SVRGModule: update_freq must be an int (recompute the full gradients every "
                        f"update_freq epochs), got {type(update_freq).__name__}")
    if update_freq <= 0:
        raise ValueError(f"SVRGModule: update_freq must be a positive integer, got {update_freq}")
    return update_freq


class SVRGModule(Module):
    """A Module trained with stochastic variance-reduced gradients.

    Takes Module's arguments plus update_freq (int > 0): the full gradients (and the weight
    snapshot they are taken at) are recomputed every update_freq epochs of `fit`.  Used by hand,
    call `update_full_grads(train_data)` at those epochs, then forward_backward/update per batch.
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",), logger=logging,
                 context=None, work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None, update_freq: Optional[int] = None):
        super().__init__(symbol, data_names=data_names, label_names=label_names, logger=logger,
                         context=context, work_load_list=work_load_list, fixed_param_names=fixed_param_names,
                         state_names=state_names, group2ctxs=group2ctxs, compression_params=compression_params)
        self.update_freq = _check_update_freq(update_freq)
        # the snapshot module: same graph and devices, its own weights and gradients
        self._mod_aux = Module(symbol, data_names, label_names, logger, context, work_load_list,
                               fixed_param_names, state_names, group2ctxs, compression_params)
        self._param_dict: Optional[List[Dict[str, nd.NDArray]]] = None
        self._ctx_len = len(self._context)

    # -- binding: both modules follow the same shapes ----------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module=None, grad_req="write") -> None:
        """Bind this module and the snapshot module for the same input shapes."""
        super().bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind, shared_module,
                     grad_req)
        if for_training:
            self._mod_aux.bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind,
                               shared_module, grad_req)

    def _reset_bind(self) -> None:
        super()._reset_bind()
        self._mod_aux._reset_bind()

    def reshape(self, data_shapes, label_shapes=None) -> None:
        """Reshape both modules for new input shapes."""
        super().reshape(data_shapes, label_shapes=label_shapes)
        self._mod_aux.reshape(data_shapes, label_shapes=label_shapes)

    # -- optimizer ---------------------------------------------------------------------------------
    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        """Install an `_SVRGOptimizer` wrapping `optimizer`; with a KVStore, also create the
        '<param>_full' keys the full gradients are summed in across devices and workers."""
        if self.optimizer_initialized and not force_init:
            # keep the full gradients too: a second fit() call would otherwise lose mu
            warnings.warn("optimizer already initialized, ignoring...", stacklevel=2)
            return
        params = self.get_params()[0]
        self._param_dict = [{name: nd.zeros(value.shape, ctx=ctx) for name, value in params.items()}
                            for ctx in self._context]
        svrg = self._create_optimizer(_SVRGOptimizer.__name__, optimizer, kvstore, optimizer_params)
        super().init_optimizer(kvstore=kvstore, optimizer=svrg, optimizer_params=optimizer_params,
                               force_init=force_init)
        if self._kvstore is not None:
            for name in self._exec_group.param_names:
                self._kvstore.init(name + FULL_SUFFIX, nd.zeros(self._arg_params[name].shape))

    def _create_optimizer(self, optimizer: str, default_opt, kvstore, optimizer_params) -> opt_mod.Optimizer:
        """The _SVRGOptimizer, with the indices (and '_full' names) Module.init_optimizer would use."""
        _, _, batch_size, idx2name = self._optimizer_setting(kvstore)
        for name in self._param_dict[0]:
            idx2name[max(idx2name, default=-1) + 1] = name + FULL_SUFFIX
        params = dict(optimizer_params)
        params.setdefault("rescale_grad", 1.0 / batch_size)
        params["default_optimizer"] = default_opt
        params["param_idx2name"] = idx2name
        return opt_mod.create(optimizer, **params)

    # -- computation ---------------------------------------------------------------------------------
    def forward(self, data_batch, is_train: Optional[bool] = None) -> None:
        """Forward on this module; a training forward also runs the snapshot module on the batch."""
        super().forward(data_batch, is_train)
        if is_train:
            self._mod_aux.forward(data_batch, is_train)

    def backward(self, out_grads=None) -> None:
        """Backward on both modules (the snapshot's gradients g_i(w~) feed the SVRG correction)."""
        super().backward(out_grads)
        if self._mod_aux.binded:
            self._mod_aux.backward(out_grads)

    def update(self) -> None:
        """Replace each gradient by g_i(w) - g_i(w~) + mu, then let the optimizer step."""
        self._require(params=True, optimizer=True, what="update")
        self._update_svrg_gradients()
        super().update()

    def prepare(self, data_batch, sparse_row_id_fn=None) -> None:
        """Prepare both modules for the batch."""
        super().prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self._mod_aux.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)

    def _update_svrg_gradients(self) -> None:
        group, snap = self._exec_group, self._mod_aux._exec_group
        for k in range(self._ctx_len):
            for i, name in enumerate(group.param_names):
                grad = group.grad_arrays[i][k]
                if grad is None:  # a fixed parameter
                    continue
                self._svrg_grads_update_rule([grad], [snap.grad_arrays[i][k]], [self._param_dict[k][name]])

    @staticmethod
    def _svrg_grads_update_rule(g_curr_batch_curr_weight, g_curr_batch_special_weight,
                                g_special_weight_all_batch):
        """In place, each g in the first list becomes g - g_snapshot + mu; returns that list."""
        for g, g_snap, mu in zip(g_curr_batch_curr_weight, g_curr_batch_special_weight, g_special_weight_all_batch):
            g -= g_snap
            g += mu
        return g_curr_batch_curr_weight

    # -- full gradients --------------------------------------------------------------------------------
    def update_full_grads(self, train_data) -> None:
        """Snapshot the current weights into the snapshot module and set mu to the mean batch
        gradient over all of `train_data` (a padded last batch counts as its unpadded fraction);
        with a KVStore, the devices' and workers' means are combined through it."""
        self._require(params=True, optimizer=True, what="update_full_grads")
        names = self._exec_group.param_names
        arg, aux = self.get_params()
        self._mod_aux.set_params(arg_params=arg, aux_params=aux)
        # start from zero: MXNet 1.9.1 adds each pass onto the previous mean, which biases mu
        for per_dev in self._param_dict:
            for arr in per_dev.values():
                arr[:] = 0
        train_data.reset()
        nbatch, pad = 0, 0
        for batch in train_data:
            self._mod_aux.forward(batch, is_train=True)
            self._mod_aux.backward()
            nbatch += 1
            pad = getattr(batch, "pad", 0) or 0
            for k in range(self._ctx_len):
                for i, name in enumerate(names):
                    g = self._mod_aux._exec_group.grad_arrays[i][k]
                    if g is not None:
                        self._param_dict[k][name] += g
        if nbatch == 0:
            raise ArgumentError("update_full_grads: train_data yielded no batch")
        batches = nbatch - pad / train_data.batch_size
        for name in names:
            means = [per_dev[name] for per_dev in self._param_dict]
            for m in means:
                m /= batches
            if self._kvstore is not None:
                self._accumulate_kvstore(name, means)

    def _accumulate_kvstore(self, key: str, value: list) -> None:
        """Sum `value` (one array per device) in the store under key_full across devices and
        workers, read the sum back into `value`, and keep its per-device share as mu."""
        self._kvstore.push(key + FULL_SUFFIX, value)
        self._kvstore._barrier()
        self._kvstore.pull(key + FULL_SUFFIX, out=value)
        self._allocate_gradients(key, value)

    def _allocate_gradients(self, key: str, value: list) -> None:
        """mu on device k: the pulled sum divided by the number of devices."""
        for k in range(self._ctx_len):
            self._param_dict[k][key] = value[k] / self._ctx_len

    def _fit_epoch_begin(self, epoch: int, train_data) -> None:
        """fit's per-epoch hook: a full-gradient pass every update_freq epochs."""
        if epoch % self.update_freq == 0:
            self.update_full_grads(train_data)
            train_data.reset()
