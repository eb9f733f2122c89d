"""DataParallelExecutorGroup: one executor per device, each running a slice of every batch.

A Module over `context=[cpu(0), cpu(1)]` binds one executor per context.  Each batch is cut
along its batch axis ('N' of the layout) in proportion to the work load list, each executor
runs its slice, outputs are concatenated back, and the parameter gradients of the devices are
summed through the KVStore before the update (ember/module/module.py).  Executors of a group
made with `shared_group` (buckets) share the parameters, data buffers and storage of the
other group's executors.
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence

from .. import ndarray as nd
from ..context import Context, cpu
from ..io import DataDesc


def split_input_slice(batch_size: int, work_load_list: Sequence[float]) -> List[slice]:
    """Slices of a batch proportional to each device's work load (MXNet's rounding: the last
    device takes what rounding left); ValueError when a device would get no sample."""
    total = float(sum(work_load_list))
    if total <= 0:
        raise ValueError(f"work_load_list must have a positive sum, got {list(work_load_list)}")
    counts = [int(round(w * batch_size / total)) for w in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices, end = [], 0
    for n in counts:
        begin = min(end, batch_size)
        end = min(begin + n, batch_size)
        if begin >= end:
            raise ValueError(f"Too many slices: a batch of {batch_size} cannot be split over "
                             f"{len(work_load_list)} devices with work loads {list(work_load_list)}; some splits are empty")
        slices.append(slice(begin, end))
    return slices


def prepare_group2ctxs(group2ctxs, num_ctx: int) -> List[Optional[Dict[str, Context]]]:
    """One {ctx_group: context} per device from a dict (a context, or one or num_ctx contexts per
    group) or a list of num_ctx dicts."""
    if group2ctxs is None:
        return [None] * num_ctx
    if isinstance(group2ctxs, (list, tuple)):
        if len(group2ctxs) != num_ctx:
            raise ValueError(f"group2ctxs has {len(group2ctxs)} entries, there are {num_ctx} contexts")
        return list(group2ctxs)
    if not isinstance(group2ctxs, dict):
        raise TypeError("group2ctxs must be a dict of ctx_group -> context(s) or a list of such dicts, "
                        f"got {type(group2ctxs).__name__}")
    out: List[Dict[str, Context]] = [{} for _ in range(num_ctx)]
    for group, devs in group2ctxs.items():
        if isinstance(devs, Context):
            devs = [devs] * num_ctx
        devs = list(devs)
        if len(devs) == 1:
            devs = devs * num_ctx
        if len(devs) != num_ctx:
            raise ValueError(f"group2ctxs['{group}'] has {len(devs)} contexts; give 1 or {num_ctx}")
        for i in range(num_ctx):
            out[i][group] = devs[i]
    return out


def _as_descs(shapes) -> Optional[List[DataDesc]]:
    if shapes is None:
        return None
    return [x if isinstance(x, DataDesc) else DataDesc(*x) for x in shapes]


def _take_slice(src, sl: slice, axis: int):
    """The part `sl` of `src` along `axis` (the whole array when the slice covers it)."""
    if axis < 0 or (sl.start == 0 and sl.stop == src.shape[axis]):
        return src
    if axis == 0:
        return src[sl.start:sl.stop]
    return nd.slice_axis(src, axis=axis, begin=sl.start, end=sl.stop)


def _copy_into(dst, src) -> None:
    if not isinstance(src, nd.NDArray):
        src = nd.array(src, dtype=dst.dtype)
    if src is not dst:
        dst[:] = src.as_in_context(dst.context) if src.context != dst.context else src


def merge_device_outputs(outputs, major_axis: Sequence[int]) -> list:
    """[[out_dev1, out_dev2], ...] -> [out, ...]: concatenated along each batch axis (the first
    device's array for outputs without one)."""
    merged = []
    for tensors, axis in zip(outputs, major_axis):
        if axis >= 0 and len(tensors) > 1:
            first = tensors[0].context
            merged.append(nd.concat(*[t.as_in_context(first) for t in tensors], dim=axis))
        else:
            merged.append(tensors[0])
    return merged


class DataParallelExecutorGroup:
    """Executors of one symbol on several devices, each fed a slice of every batch.

    As MXNet's: workload (relative batch share per device), param_names (shared with
    shared_group's executors), fixed_param_names (no gradient), grad_req (str, list or dict),
    state_names, group2ctxs (ctx_group placement per device).
    """

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names, for_training: bool,
                 inputs_need_grad: bool, shared_group: Optional["DataParallelExecutorGroup"] = None,
                 logger=logging, fixed_param_names=None, grad_req="write", state_names=None, group2ctxs=None):
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload) if workload is not None else [1] * len(self.contexts)
        if len(self.workload) != len(self.contexts):
            raise ValueError(f"workload has {len(self.workload)} entries for {len(self.contexts)} contexts")
        self.group2ctxs = prepare_group2ctxs(group2ctxs, len(self.contexts))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self._total_exec_bytes = 0
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        data_shapes = _as_descs(data_shapes)
        label_shapes = _as_descs(label_shapes)
        data_names = [d.name for d in data_shapes]
        self.grad_req = self._grad_reqs(grad_req if for_training else "null", data_names)
        self.shared_data_arrays = (shared_group.shared_data_arrays if shared_group is not None
                                   else [{} for _ in self.contexts])
        self.batch_size = None
        self.slices: Optional[List[slice]] = None
        self.execs: list = []
        self._default_execs = None
        self.data_arrays = self.label_arrays = self.param_arrays = self.state_arrays = None
        self.grad_arrays = self.aux_arrays = self.input_grad_arrays = None
        self.data_shapes = self.label_shapes = self.data_names = self.label_names = None
        self.data_layouts = self.label_layouts = None
        self.output_names = symbol.list_outputs()
        self.num_outputs = len(self.output_names)
        self.output_layouts = [DataDesc.get_batch_axis(symbol[i].attr("__layout__")) for i in range(self.num_outputs)]
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _grad_reqs(self, grad_req, data_names) -> Dict[str, str]:
        def default(name, req):
            if name in self.param_names:
                return "null" if name in self.fixed_param_names else req
            if name in data_names:
                return req if self.inputs_need_grad else "null"
            return "null"
        if isinstance(grad_req, str):
            return {n: default(n, grad_req) for n in self.arg_names}
        if isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(self.arg_names):
                raise ValueError(f"grad_req has {len(grad_req)} entries for {len(self.arg_names)} arguments")
            return dict(zip(self.arg_names, grad_req))
        if isinstance(grad_req, dict):
            reqs = {n: default(n, "write") for n in self.arg_names}
            reqs.update(grad_req)
            return reqs
        raise ValueError(f"grad_req must be a str, list, tuple or dict, got {type(grad_req).__name__}")

    # -- binding ----------------------------------------------------------------------------
    def decide_slices(self, data_shapes) -> List[int]:
        """The batch axis of each input; sets batch_size and the per-device slices."""
        if not data_shapes:
            raise ValueError("decide_slices: no data shapes")
        axes = [DataDesc.get_batch_axis(d.layout) for d in data_shapes]
        for d, axis in zip(data_shapes, axes):
            if axis == -1:
                continue
            size = d.shape[axis]
            if self.batch_size is None:
                self.batch_size = size
                self.slices = split_input_slice(size, self.workload)
            elif size != self.batch_size:
                raise ValueError(f"all data must have the same batch size: batch_size = {self.batch_size}, "
                                 f"but {d.name} has shape {d.shape}")
        return axes

    def _sliced(self, shapes, i: int, axes) -> List[DataDesc]:
        out = []
        for d, axis in zip(shapes, axes):
            shape = list(d.shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            out.append(DataDesc(d.name, tuple(shape), d.dtype, d.layout))
        return out

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape: bool = False) -> None:
        """Bind (or, with reshape, reshape from the first executors) one executor per device."""
        if not reshape and self.execs:
            raise ValueError("bind_exec: executors are already bound; use reshape")
        data_shapes = _as_descs(data_shapes)
        label_shapes = _as_descs(label_shapes)
        self.batch_size = None
        self.data_layouts = self.decide_slices(data_shapes)
        if label_shapes is not None:
            self.label_layouts = self.decide_slices(label_shapes)
        for i in range(len(self.contexts)):
            shapes_i = self._sliced(data_shapes, i, self.data_layouts)
            if label_shapes is not None:
                shapes_i += self._sliced(label_shapes, i, self.label_layouts)
            if reshape:
                self.execs[i] = self._default_execs[i].reshape(
                    allow_up_sizing=True, **{d.name: tuple(d.shape) for d in shapes_i})
            else:
                self.execs.append(self._bind_ith_exec(i, shapes_i, shared_group))
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes
        self.data_names = [d.name for d in data_shapes]
        self.label_names = [d.name for d in label_shapes] if label_shapes is not None else None
        self._collect_arrays()

    def _bind_ith_exec(self, i: int, shapes: List[DataDesc], shared_group):
        shared_exec = shared_group.execs[i] if shared_group is not None else None
        types = {d.name: d.dtype for d in shapes if d.dtype is not None}
        attrs = self.symbol.attr_dict()
        for name in list(types):  # a variable's own __dtype__ wins, as in MXNet
            code = attrs.get(name, {}).get("__dtype__")
            if code is not None and code != "-1":
                from ..symbolic.symbol import CODE_TO_DTYPE
                types[name] = CODE_TO_DTYPE.get(int(code), types[name])
        # the executors' arguments stay dense: the module keeps its parameter copies in the declared
        # storage types and its kvstore / updater path works on the dense device arrays
        dense = {n: "default" for n in self.symbol.list_arguments()}
        exe = self.symbol.simple_bind(ctx=self.contexts[i], grad_req=self.grad_req, type_dict=types,
                                      stype_dict=dense,
                                      shared_arg_names=self.param_names, shared_exec=shared_exec,
                                      group2ctx=self.group2ctxs[i], shared_buffer=self.shared_data_arrays[i],
                                      **{d.name: tuple(d.shape) for d in shapes})
        self._total_exec_bytes += exe.memory_stats()["planned_bytes"]
        return exe

    def _collect_arrays(self) -> None:
        execs = self.execs
        slices = self.slices or [slice(i, i + 1) for i in range(len(execs))]
        self.data_arrays = [[(slices[i], e.arg_dict[name]) for i, e in enumerate(execs)] for name in self.data_names]
        self.state_arrays = [[e.arg_dict[name] for e in execs] for name in self.state_names]
        self.label_arrays = ([[(slices[i], e.arg_dict[name]) for i, e in enumerate(execs)] for name in self.label_names]
                             if self.label_names is not None else None)
        idx = [i for i, n in enumerate(self.arg_names) if n in self.param_names]
        self.param_arrays = [[e.arg_arrays[i] for e in execs] for i in idx]
        self.grad_arrays = [[e.grad_arrays[i] for e in execs] for i in idx] if self.for_training else None
        self.input_grad_arrays = ([[e.grad_arrays[self.arg_names.index(n)] for e in execs]
                                   for n in self.data_names if n in self.arg_names]
                                  if self.inputs_need_grad else None)
        self.aux_arrays = [[e.aux_arrays[i] for e in execs] for i in range(len(self.aux_names))]

    def reshape(self, data_shapes, label_shapes) -> None:
        """Reshape every executor for new input shapes (from the first-bound executors, sharing their memory)."""
        data_shapes, label_shapes = _as_descs(data_shapes), _as_descs(label_shapes)
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    # -- parameters -------------------------------------------------------------------------
    def set_params(self, arg_params, aux_params, allow_extra: bool = False) -> None:
        """Copy parameter values into every executor."""
        for e in self.execs:
            e.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params) -> None:
        """Write the device average of each parameter into arg_params / aux_params (in place)."""
        for names, blocks, target in ((self.param_names, self.param_arrays, arg_params),
                                      (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                total = block[0].copyto(cpu())
                for w in block[1:]:
                    total += w.copyto(cpu())
                if len(block) > 1:
                    total /= len(block)
                target[name][:] = total.astype(target[name].dtype)

    # -- computation -------------------------------------------------------------------------
    @staticmethod
    def _load(sources, targets, axes) -> None:
        for src, dsts, axis in zip(sources, targets, axes):
            for sl, dst in dsts:
                _copy_into(dst, _take_slice(src, sl, axis))

    def forward(self, data_batch, is_train: Optional[bool] = None) -> None:
        """Load each device's slice of the batch and run forward on every device."""
        self._load(data_batch.data, self.data_arrays, self.data_layouts)
        if is_train is None:
            is_train = self.for_training
        if self.label_arrays is not None and getattr(data_batch, "label", None):
            self._load(data_batch.label, self.label_arrays, self.label_layouts)
        for e in self.execs:
            e.forward(is_train=is_train)

    def get_output_shapes(self):
        shapes = []
        for name, out, axis in zip(self.output_names, self.execs[0].outputs, self.output_layouts):
            shape = list(out.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_outputs(self, merge_multi_context: bool = True, begin: int = 0, end: Optional[int] = None):
        """Outputs [begin, end): merged over devices, or [[out_dev1, out_dev2], ...]."""
        end = self.num_outputs if end is None else end
        outs = [[e.outputs[i] for e in self.execs] for i in range(begin, end)]
        return merge_device_outputs(outs, self.output_layouts[begin:end]) if merge_multi_context else outs

    def get_states(self, merge_multi_context: bool = True):
        if merge_multi_context:
            raise ValueError("get_states: merge_multi_context=True is not supported (as in MXNet)")
        return self.state_arrays

    def set_states(self, states=None, value=None) -> None:
        """Set the state arrays from [[state_dev1, ...], ...] or to one scalar value."""
        if (states is None) == (value is None):
            raise ValueError("set_states: give exactly one of states and value")
        if states is not None:
            for srcs, dsts in zip(states, self.state_arrays):
                for src, dst in zip(srcs, dsts):
                    _copy_into(dst, src)
        else:
            for dsts in self.state_arrays:
                for dst in dsts:
                    dst[:] = value

    def get_input_grads(self, merge_multi_context: bool = True):
        if not self.inputs_need_grad:
            raise ValueError("get_input_grads: bind with inputs_need_grad=True")
        if merge_multi_context:
            return merge_device_outputs(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def backward(self, out_grads=None) -> None:
        """Backward on every device, each with its slice of the head gradients."""
        if not self.for_training:
            raise ValueError("backward: re-bind with for_training=True")
        if isinstance(out_grads, nd.NDArray):
            out_grads = [out_grads]
        for i, e in enumerate(self.execs):
            sliced = []
            for grad, axis in zip(out_grads or [], self.output_layouts):
                part = _take_slice(grad, self.slices[i], axis) if axis >= 0 else grad
                sliced.append(part.as_in_context(self.contexts[i]))
            e.backward(out_grads=sliced or None)

    def update_metric(self, eval_metric, labels, pre_sliced: bool = False) -> None:
        """Update the metric with each device's outputs and its slice of the labels."""
        for i, e in enumerate(self.execs):
            if pre_sliced:
                labels_i = labels[i]
            else:
                labels_i = [_take_slice(lab, self.slices[i], axis) if axis >= 0 else lab
                            for lab, axis in zip(labels, self.label_layouts or [0] * len(labels))]
            eval_metric.update_dict(OrderedDict(zip(self.label_names or [], labels_i)),
                                    OrderedDict(zip(self.output_names, e.outputs)))

    def install_monitor(self, mon) -> None:
        for e in self.execs:
            mon.install(e)
