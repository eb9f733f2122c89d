"""gluon.Trainer: applies an optimizer to a set of Parameters after autograd's backward
(MXNet 1.9.1's `mx.gluon.Trainer`).

A step rescales gradients by 1/batch_size, sums the gradients of parameters held on several
contexts (and over workers with a 'dist' store) through a KVStore, then updates every copy:
either by one Updater per context here, or by the optimizer running in the store
(`update_on_kvstore`), which then hands back the new weights.  All of a step's gradients go
to the store in one list call, so the store can fuse them into few transfers.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

from .. import kvstore as kvs
from .. import optimizer as opt
# MXNet's model._create_kvstore rules (store or not, where updates run), shared with Module
from ..module.module import create_kvstore as _create_kvstore
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer"]

_STALE_GRAD = ("Gradient of Parameter `{name}` on context {ctx} has not been updated by backward since last "
               "`step`. This could mean a bug in your model that made it only use a subset of the Parameters "
               "(Blocks) for this iteration. If you are intentionally only using a subset, call step with "
               "ignore_stale_grad=True to suppress this warning and skip updating of Parameters with stale "
               "gradient")


def _create_sparse_kvstore(kvstore) -> Tuple[Any, bool]:
    """MXNet's choice for parameters declared row_sparse: always a store, always updating on it."""
    if isinstance(kvstore, str):
        return kvs.create(kvstore), True
    if isinstance(kvstore, kvs.KVStoreBase) or hasattr(kvstore, "push"):
        return kvstore, True
    raise TypeError(f"Cannot create '{kvstore}' KVStore with row_sparse parameters. "
                    "The type must be KVStore or str.")


class Trainer:
    """Applies `optimizer` (a name for `mx.optimizer.create` with `optimizer_params`, or an
    Optimizer instance) to `params` (a ParameterDict, a dict or a list of Parameters; dicts in
    sorted key order, so every worker numbers the parameters alike).

    kvstore: 'device', 'local', 'dist_sync', 'dist_device_sync', 'dist_async', a KVStore, or
    None (each context then updates its copy with its own gradient).  update_on_kvstore: run
    the optimizer in the store (None: as MXNET_UPDATE_ON_KVSTORE, default yes, says; always for
    'dist_async').  compression_params go to the store's set_gradient_compression.
    """

    def __init__(self, params, optimizer, optimizer_params: Optional[dict] = None,
                 kvstore: Union[str, Any, None] = "device", compression_params: Optional[dict] = None,
                 update_on_kvstore: Optional[bool] = None):
        if isinstance(params, (dict, ParameterDict)):
            params = [params[key] for key in sorted(params.keys())]
        if not isinstance(params, (list, tuple)):
            raise ValueError(f"First argument must be a list or dict of Parameters, got {type(params)}.")
        self._params: List[Parameter] = []
        self._param2idx: Dict[str, int] = {}
        self._contains_sparse_weight = False
        self._contains_sparse_grad = False
        for i, param in enumerate(params):
            if not isinstance(param, Parameter):
                raise ValueError(f"First argument must be a list or dict of Parameters, got list of {type(param)}.")
            self._param2idx[param.name] = i
            self._params.append(param)
            param._set_trainer(self)
            self._contains_sparse_weight |= param._stype != "default"
            self._contains_sparse_grad |= param._grad_stype != "default"
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        self._init_optimizer(optimizer, optimizer_params if optimizer_params else {})
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore: Optional[bool] = None
        self._distributed: Optional[bool] = None
        self._params_to_init: List[Parameter] = []
        self._reset_kvstore()

    # -- set-up ------------------------------------------------------------------------------------
    def _check_contexts(self):
        """The contexts every parameter lives on; they must be the same for all."""
        contexts = None
        for param in self._params:
            ctx = param.list_ctx()
            assert contexts is None or contexts == ctx, (
                f"All Parameters must be initialized on the same set of contexts, but Parameter {param.name} "
                f"is initialized on {ctx} while previous Parameters are initialized on {contexts}.")
            contexts = ctx
        if contexts is None:
            raise ValueError("First argument must be a list or dict of Parameters, got an empty one.")
        return list(contexts)

    def _param_dict(self) -> Dict[int, Parameter]:
        # the optimizer reads lr_mult / wd_mult from the live parameters, so later changes apply
        return {i: param for i, param in enumerate(self._params)}

    def _init_optimizer(self, optimizer, optimizer_params: dict) -> None:
        if isinstance(optimizer, opt.Optimizer):
            assert not optimizer_params, ("optimizer_params must be None if optimizer is an instance of "
                                          "Optimizer instead of str")
            self._optimizer = optimizer
            self._optimizer.param_dict = self._param_dict()
        else:
            self._optimizer = opt.create(optimizer, param_dict=self._param_dict(), **optimizer_params)
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]

    def _reset_kvstore(self) -> None:
        """Forget the store (a Parameter calls this when loaded values replace those the store
        holds): the next step makes a new one and initializes it from the parameters."""
        if self._kvstore is not None and "dist" in self._kvstore.type:
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self) -> None:
        """Create the store and decide where updates run (MXNet's three cases: sparse weights,
        sparse gradients, dense).  row_sparse weights live in the store and are read back through
        row_sparse_data; row_sparse gradients are pushed and pulled on their own."""
        config = self._kvstore_params
        if self._contains_sparse_weight:
            kvstore, update_on_kvstore = _create_sparse_kvstore(config["kvstore"])
            self._distributed = "dist" in kvstore.type
            if config["update_on_kvstore"] is False:
                raise ValueError("Cannot set update_on_kvstore=False when sparse weights are present.")
        elif self._contains_sparse_grad:
            arg_arrays = {param.name: param.data(self._contexts[0]) for param in self._params}
            kvstore, _ = _create_kvstore(config["kvstore"], len(self._contexts), arg_arrays)
            self._distributed = "dist" in kvstore.type if kvstore else False
            update_on_kvstore = self._distributed
            if config["update_on_kvstore"] is not None:
                if config["update_on_kvstore"] is False and self._distributed:
                    raise ValueError("Cannot set update_on_kvstore=False on dist kvstore when sparse gradients "
                                     "are present.")
                update_on_kvstore = config["update_on_kvstore"]
        else:
            arg_arrays = {param.name: param.data(self._contexts[0]) for param in self._params}
            kvstore, update_on_kvstore = _create_kvstore(config["kvstore"], len(self._contexts), arg_arrays)
            self._distributed = "dist" in kvstore.type if kvstore else False
            if self._distributed and "async" in kvstore.type:
                update_on_kvstore = True
                if config["update_on_kvstore"] is False:
                    raise ValueError("Please set update_on_kvstore=True when training in async mode.")
            if config["update_on_kvstore"] is not None:
                update_on_kvstore = config["update_on_kvstore"]
            if update_on_kvstore and kvstore is None:
                raise ValueError(f"update_on_kvstore=True needs a kvstore, but kvstore={config['kvstore']!r} with "
                                 f"{len(self._contexts)} context(s) in one process makes none; leave "
                                 "update_on_kvstore unset, or use several contexts or a 'dist' kvstore")
            capable = getattr(kvstore, "is_capable", None)  # duck-typed stores may not say
            if update_on_kvstore and capable is not None and not capable(kvs.KVStore.OPTIMIZER):
                if config["update_on_kvstore"]:
                    raise ValueError(f"Please set update_on_kvstore=False when training with {type(kvstore)}")
                update_on_kvstore = False
        if kvstore is not None:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            self._kvstore = kvstore
            self._update_on_kvstore = bool(update_on_kvstore)
        else:
            self._kvstore = None
            self._update_on_kvstore = None
        self._kv_initialized = True

    def _init_params(self) -> None:
        """Put the initialized parameters into the store (worker 0's values win, and every
        context starts from them); parameters still waiting for deferred init stay pending."""
        assert self._kv_initialized, "Cannot initialize parameters in KVStore when KVStore is not initialized."
        pending, keys, values, outs, sparse = [], [], [], [], []
        if self._kvstore is not None:
            for param in self._params_to_init:
                if param._deferred_init:
                    pending.append(param)
                    continue
                arrays = param._check_and_get(param._data, list)
                idx = self._param2idx[param.name]
                if param._stype != "default":
                    sparse.append((idx, arrays[0]))  # read back through row_sparse_data's row_sparse_pull
                else:
                    keys.append(idx)
                    values.append(arrays[0])
                    outs.append(arrays)
            if sparse:
                self._kvstore.init([i for i, _ in sparse], [a for _, a in sparse])
            if keys and self._plugged_store():  # a pluggable store takes one key per call (as MXNet's Trainer)
                for key, value, out in zip(keys, values, outs):
                    self._kvstore.broadcast(key, value, out=out)
            elif keys:
                self._kvstore.broadcast(keys, values, out=outs)
        self._params_to_init = pending

    def _plugged_store(self) -> bool:
        """A store registered through KVStoreBase.register (not one of ember's own)."""
        return isinstance(self._kvstore, kvs.KVStoreBase) and not isinstance(self._kvstore, kvs.KVStore)

    def _ensure_kvstore(self) -> None:
        """Check the parameters still live where they did, then set up the store if needed."""
        for param in self._params:
            if param.list_ctx() != self._contexts:
                raise RuntimeError(
                    f"Parameter '{param.name}' is now on {param.list_ctx()}, but the Trainer was created for "
                    f"{self._contexts}; create the Trainer after moving parameters (reset_ctx)")
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    # -- learning rate and optimizer -------------------------------------------------------------------
    @property
    def learning_rate(self) -> float:
        """The optimizer's current learning rate."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning rate can be accessed.")
        return self._optimizer.learning_rate

    @property
    def optimizer(self) -> opt.Optimizer:
        """The optimizer this trainer applies."""
        if isinstance(self._optimizer, opt.Optimizer):
            return self._optimizer
        raise UserWarning("Optimizer has not been initialized yet")

    def set_learning_rate(self, lr: float) -> None:
        """Set the optimizer's learning rate (not allowed while an lr scheduler drives it)."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning rate is mutated.")
        self._optimizer.set_learning_rate(lr)

    def _check_and_rescale_grad(self, scale: float) -> None:
        if self._update_on_kvstore and self._distributed and self._kv_initialized:
            if self._optimizer.rescale_grad != scale:
                raise UserWarning("Possible change in the `batch_size` from previous `step` detected. Optimizer "
                                  "gradient normalizing factor will not change w.r.t new batch_size when "
                                  "update_on_kvstore=True and when distributed kvstore is used.")
        self._optimizer.rescale_grad = scale

    # -- training ------------------------------------------------------------------------------------
    def step(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """One update after `autograd.backward()` (outside `record()`): gradients are normalized
        by 1/batch_size, reduced over contexts and workers, and applied.

        ignore_stale_grad: skip parameters whose gradient backward did not write since the last
        step instead of raising.
        """
        self._check_and_rescale_grad(self._scale / batch_size)
        self._ensure_kvstore()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self) -> None:
        """Sum each parameter's gradients over its contexts (and workers), leaving the sum in
        every gradient buffer; with `update()` it splits `step()` in two, e.g. to clip the
        reduced gradients in between.  Not available when updates run on the kvstore."""
        self._ensure_kvstore()
        assert not (self._kvstore and self._update_on_kvstore), (
            "allreduce_grads() when parameters are updated on kvstore is not supported. Try setting "
            "`update_on_kvstore` to False when creating trainer.")
        self._allreduce_grads()

    def update(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """The update half of `step()`, after `allreduce_grads()`.  Not available when updates
        run on the kvstore."""
        self._ensure_kvstore()
        assert not (self._kvstore and self._update_on_kvstore), (
            "update() when parameters are updated on kvstore is not supported. Try setting "
            "`update_on_kvstore` to False when creating trainer.")
        self._check_and_rescale_grad(self._scale / batch_size)
        self._update(ignore_stale_grad)

    def _allreduce_grads(self) -> None:
        """One pushpull of every trainable parameter's dense gradients: back into the gradients,
        or, when the store updates, the new weights into every copy of the parameters.  Sparse
        gradients are pushed on their own, as MXNet: a dense weight then pulls the new weight
        (or the summed gradient) back; a row_sparse weight stays in the store until
        row_sparse_data pulls the rows it needs."""
        if not self._kvstore:
            return
        keys, grads, outs = [], [], []
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            grad_list = param.list_grad()
            if grad_list[0].stype != "default":
                # ember's dist stores sum dense buffers over the workers: they get dense copies
                # (the update there is then the standard, not the lazy, one)
                pushed = [g.tostype("default") for g in grad_list] if self._distributed else grad_list
                self._kvstore.push(i, pushed, priority=-i)
                if param._stype == "default":
                    pull_list = param.list_data() if self._update_on_kvstore else grad_list
                    self._kvstore.pull(i, pull_list, priority=-i, ignore_sparse=self._distributed)
                continue
            keys.append(i)
            grads.append(grad_list)
            if self._update_on_kvstore:
                outs.append(param.list_data())
        if keys and self._plugged_store():
            for n, (key, grad) in enumerate(zip(keys, grads)):
                self._kvstore.pushpull(key, grad, out=outs[n] if self._update_on_kvstore else None, priority=-key)
        elif keys:
            self._kvstore.pushpull(keys, grads, out=outs if self._update_on_kvstore else None)

    def _update(self, ignore_stale_grad: bool = False) -> None:
        on_kvstore = bool(self._kvstore and self._update_on_kvstore)
        updates: List[List[tuple]] = [[] for _ in self._updaters]
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            data = param._check_and_get(param._data, list)  # also for row_sparse weights
            if not ignore_stale_grad:
                for arr in data:
                    if not arr._fresh_grad:
                        raise UserWarning(_STALE_GRAD.format(name=param.name, ctx=arr.context))
            if on_kvstore:
                continue  # the store updated the weights during pushpull
            for upd, arr, grad in zip(updates, data, param.list_grad()):
                if not ignore_stale_grad or arr._fresh_grad:
                    upd.append((i, grad, arr))
                    arr._fresh_grad = False
        if on_kvstore:
            return
        for updater, upd in zip(self._updaters, updates):
            if upd:
                indices, grads, weights = zip(*upd)
                updater(list(indices), list(grads), list(weights))

    def _row_sparse_pull(self, parameter: Parameter, out, row_id, full_idx: bool = False) -> None:
        """Pull rows `row_id` of `parameter`'s weight from the store into the row_sparse `out`
        (one array or one per context); `full_idx` (every row wanted) pulls the whole value
        from a single-process store, as MXNet."""
        self._ensure_kvstore()
        idx = self._param2idx[parameter.name]
        if full_idx and "dist" not in self._kvstore.type:
            if row_id.size != out.shape[0]:
                raise ValueError(f"full_idx needs every row id: got {row_id.size} for {out.shape[0]} rows")
            self._kvstore.pull(idx, out=out, priority=-idx, ignore_sparse=False)
        else:
            self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id, priority=-idx)

    # -- states ----------------------------------------------------------------------------------------
    def save_states(self, fname: str) -> None:
        """Write the optimizer's states and the optimizer itself (not its param_dict: lr_mult and
        wd_mult stay with the parameters) to `fname`, in MXNet 1.9.1's format (its pickle, which
        real MXNet's load_states reads; ember.optimizer.mxnet_states_writer)."""
        assert self._optimizer is not None
        self._ensure_kvstore()
        if self._update_on_kvstore:
            assert not self._params_to_init, ("Cannot save trainer states when some parameters are not yet "
                                              "initialized in kvstore.")
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            with open(fname, "wb") as fout:
                fout.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname: str) -> None:
        """Restore states (and the optimizer saved with them) from `fname`, written by
        `save_states` of ember (either format it has written) or of MXNet 1.9.1, read without
        unpickling anything but MXNet's state classes; the optimizer's param_dict is set from
        this trainer's parameters."""
        self._ensure_kvstore()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            updater = getattr(self._kvstore, "_updater", None)
            if updater is not None and hasattr(updater, "optimizer"):
                self._optimizer = updater.optimizer  # 'dist_async' keeps its updater on the servers
        else:
            with open(fname, "rb") as f:
                states = f.read()
            for updater in self._updaters:
                updater.set_states(states)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = self._param_dict()
