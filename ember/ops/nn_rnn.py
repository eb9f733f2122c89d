"""The fused RNN operator (rnn_relu, rnn_tanh, lstm, gru; layers; bidirectional) and its BPTT backward.

Parameters come as one flat vector in MXNet's (cuDNN's) layout: first every weight
matrix, for each layer and then each direction `W_i2h` (G*H, input) followed by
`W_h2h` (G*H, R) and, for an LSTM with `projection_size` P, `W_h2r` (P, H); then every
bias, in the same order, `b_i2h` (G*H) then `b_h2h` (G*H).  R, the size of the recurrent
state h (and of each direction's output), is P with a projection, else H.  Gate order:
LSTM i, f, g, o; GRU r, z, n (n = tanh(x_n + r * (W_hn h + b_hn))); a projected LSTM
(LSTMP) outputs r = W_h2r (o * tanh(c)).
Data is TNC; states are (num_layers * directions, N, R) (the LSTM cell state: H), indexed
layer * directions + d.  With `use_sequence_length`, a last input `sequence_length` (N,)
gives each sequence's length: steps past it output 0 and leave the states unchanged, the
reverse direction starts at the last valid step, and the final states are those of the
last valid step (cuDNN's padded-sequence semantics; MXNet 1.9.1's CPU kernel ignores the
lengths).
"""
from __future__ import annotations

from typing import Dict, Tuple

import numpy as np

from ..base import OperatorError, ShapeError
from ._nn_util import backward_via, float32_on_cpu, float_types, known, merge, sigmoid
from ._common import same_type
from .join import _CONCAT_ATTRS, _args as _concat_args, _concat, _concat_backward_infer, _concat_infer
from .registry import Attr, OpDef, register

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}

_ATTRS = {
    "state_size": Attr("int", doc="hidden units H"),
    "num_layers": Attr("int", doc="stacked layers"),
    "bidirectional": Attr("bool", False),
    "mode": Attr("str", choices=("gru", "lstm", "rnn_relu", "rnn_tanh")),
    "p": Attr("float", 0.0, doc="dropout between layers while training"),
    "state_outputs": Attr("bool", False, doc="also return the final states"),
    "projection_size": Attr("int_or_none", None, doc="LSTMP: size of the projected recurrent state"),
    "lstm_state_clip_min": Attr("float_or_none", None, doc="clip the LSTM cell state from below"),
    "lstm_state_clip_max": Attr("float_or_none", None, doc="clip the LSTM cell state from above"),
    "lstm_state_clip_nan": Attr("bool", False, doc="accepted for MXNet compatibility"),
    "use_sequence_length": Attr("bool", False, doc="a last input gives per-sequence lengths"),
}


def _check(attrs):
    if attrs["state_size"] <= 0 or attrs["num_layers"] <= 0:
        raise OperatorError(f"RNN: state_size and num_layers must be > 0, got {attrs['state_size']} "
                            f"and {attrs['num_layers']}")
    proj = attrs["projection_size"]
    if proj is not None:
        if attrs["mode"] != "lstm":
            raise OperatorError(f"RNN: projection_size is only supported for mode 'lstm', got mode "
                                f"'{attrs['mode']}'")
        if not 0 < proj < attrs["state_size"]:
            raise OperatorError(f"RNN: projection_size must be in (0, state_size={attrs['state_size']}), "
                                f"got {proj}")
    if not 0.0 <= attrs["p"] < 1.0:
        raise OperatorError(f"RNN: dropout p must be in [0, 1), got {attrs['p']}")


def _dirs(attrs):
    return 2 if attrs["bidirectional"] else 1


def _rec(attrs):
    """R: the size of the recurrent state h and of each direction's output."""
    return attrs["projection_size"] or attrs["state_size"]


def _has_mask(attrs):
    return attrs["p"] > 0 and attrs["num_layers"] > 1


def _inputs(attrs):
    names = ["data", "parameters", "state"]
    if attrs["mode"] == "lstm":
        names.append("state_cell")
    if attrs["use_sequence_length"]:
        names.append("sequence_length")
    return names


def _outputs(attrs):
    names = ["output"]
    if attrs["state_outputs"]:
        names.append("hy")
        if attrs["mode"] == "lstm":
            names.append("cy")
    if _has_mask(attrs):
        names.append("dropout_mask")
    return names


def _visible(attrs):
    return len(_outputs(attrs)) - (1 if _has_mask(attrs) else 0)


def param_size(attrs: dict, input_size: int) -> int:
    """Length of the flat parameter vector."""
    g, h, r, dirs = _GATES[attrs["mode"]], attrs["state_size"], _rec(attrs), _dirs(attrs)
    proj = r * h if attrs["projection_size"] else 0
    total = 0
    for layer in range(attrs["num_layers"]):
        in_l = input_size if layer == 0 else dirs * r
        total += dirs * (g * h * (in_l + r) + proj + 2 * g * h)
    return total


def unpack_params(attrs: dict, flat, input_size: int) -> Dict[Tuple[int, int], Tuple]:
    """{(layer, direction): (W_i2h, W_h2h, b_i2h, b_h2h, W_h2r or None)} as views into the flat vector."""
    g, h, r, dirs = _GATES[attrs["mode"]], attrs["state_size"], _rec(attrs), _dirs(attrs)
    projected = bool(attrs["projection_size"])
    out, pos, keys = {}, 0, []

    def take(rows, cols):
        nonlocal pos
        view = flat[pos:pos + rows * cols].reshape(rows, cols)
        pos += rows * cols
        return view

    for layer in range(attrs["num_layers"]):
        in_l = input_size if layer == 0 else dirs * r
        for d in range(dirs):
            wx, wh = take(g * h, in_l), take(g * h, r)
            out[(layer, d)] = [wx, wh, take(r, h) if projected else None]
            keys.append((layer, d))
    for key in keys:
        bx = flat[pos:pos + g * h]
        bh = flat[pos + g * h:pos + 2 * g * h]
        pos += 2 * g * h
        wx, wh, wr = out[key]
        out[key] = (wx, wh, bx, bh, wr)
    return out


def _infer_shape(attrs, in_shapes):
    _check(attrs)
    ins = list(in_shapes)
    d = ins[0]
    n_out = len(_outputs(attrs))
    if not known(d):
        return ins, [None] * n_out
    d = tuple(d)
    if len(d) != 3:
        raise ShapeError(f"RNN: data must be 3-D (seq_len, batch, input_size), got shape {d}")
    t, n, i = d
    h, r, dirs, layers = attrs["state_size"], _rec(attrs), _dirs(attrs), attrs["num_layers"]
    ins[1] = merge("RNN", "parameters", ins[1], (param_size(attrs, i),))
    ins[2] = merge("RNN", "state", ins[2], (layers * dirs, n, r))
    if attrs["mode"] == "lstm":
        ins[3] = merge("RNN", "state_cell", ins[3], (layers * dirs, n, h))
    if attrs["use_sequence_length"]:
        ins[-1] = merge("RNN", "sequence_length", ins[-1], (n,))
    outs = [(t, n, dirs * r)]
    if attrs["state_outputs"]:
        outs.append((layers * dirs, n, r))
        if attrs["mode"] == "lstm":
            outs.append((layers * dirs, n, h))
    if _has_mask(attrs):
        outs.append((layers - 1, t, n, dirs * r))
    return ins, outs


def _infer_type(attrs, in_dtypes):
    """Every input and output shares the data's float dtype, except sequence_length (any number type)."""
    n_out = len(_outputs(attrs))
    if not attrs["use_sequence_length"]:
        return float_types("RNN", attrs, in_dtypes, n_out)[:2]
    ins, outs, _ = float_types("RNN", attrs, in_dtypes[:-1], n_out)
    seq = in_dtypes[-1] if in_dtypes[-1] is not None else ins[0]
    return ins + [seq], outs


# -- one direction of one layer ------------------------------------------------------
def _clip(xp, c, attrs):
    lo, hi = attrs["lstm_state_clip_min"], attrs["lstm_state_clip_max"]
    if lo is None and hi is None:
        return c
    return xp.clip(c, lo if lo is not None else -np.inf, hi if hi is not None else np.inf)


def _step_masks(xp, lengths, t_len, dtype):
    """(T, N, 1) 1/0 masks of the valid steps of each sequence, or None when all are valid."""
    if lengths is None:
        return None
    steps = xp.arange(t_len).reshape(t_len, 1, 1)
    return (steps < lengths.reshape(1, -1, 1)).astype(dtype)


def _direction_forward(xp, attrs, x, weights, h0, c0, reverse, masks):
    """Run one direction over x (T, N, I); returns (outputs (T, N, R), hT, cT, cache).

    masks: (T, N, 1) valid-step masks or None; a masked step outputs 0 and keeps the states."""
    mode = attrs["mode"]
    wx, wh, bx, bh, wr = weights
    t_len, n, _ = x.shape
    hdim = wx.shape[0] // _GATES[mode]
    ax = (x.reshape(t_len * n, -1) @ wx.T + bx).reshape(t_len, n, -1)   # every input projection: one GEMM
    out = xp.empty((t_len, n, h0.shape[-1]), dtype=x.dtype)
    steps = range(t_len - 1, -1, -1) if reverse else range(t_len)
    h, c = h0, c0
    cache = {"h_prev": xp.empty_like(out), "gates": [None] * t_len, "c_prev": [None] * t_len,
             "c": [None] * t_len, "hn": [None] * t_len, "h_full": [None] * t_len}
    for t in steps:
        cache["h_prev"][t] = h
        ah = h @ wh.T + bh
        c_new = None
        if mode == "lstm":
            a = ax[t] + ah
            i_g = sigmoid(xp, a[:, :hdim])
            f_g = sigmoid(xp, a[:, hdim:2 * hdim])
            g_g = xp.tanh(a[:, 2 * hdim:3 * hdim])
            o_g = sigmoid(xp, a[:, 3 * hdim:])
            c_new = _clip(xp, f_g * c + i_g * g_g, attrs)
            cache["c_prev"][t], cache["c"][t] = c, c_new
            cache["gates"][t] = (i_g, f_g, g_g, o_g)
            h_new = o_g * xp.tanh(c_new)
            if wr is not None:
                cache["h_full"][t] = h_new
                h_new = h_new @ wr.T
        elif mode == "gru":
            r = sigmoid(xp, ax[t][:, :hdim] + ah[:, :hdim])
            z = sigmoid(xp, ax[t][:, hdim:2 * hdim] + ah[:, hdim:2 * hdim])
            hn = ah[:, 2 * hdim:]
            nn = xp.tanh(ax[t][:, 2 * hdim:] + r * hn)
            cache["gates"][t] = (r, z, nn)
            cache["hn"][t] = hn
            h_new = (1 - z) * nn + z * h
        else:
            a = ax[t] + ah
            h_new = xp.maximum(a, 0) if mode == "rnn_relu" else xp.tanh(a)
            cache["gates"][t] = (h_new,)
        if masks is None:
            out[t] = h_new
            h, c = h_new, c_new
        else:  # padded steps: output 0, states carried over unchanged
            m = masks[t]
            out[t] = m * h_new
            h = m * h_new + (1 - m) * h
            if c_new is not None:
                c = m * c_new + (1 - m) * c
    return out, h, c, cache


def _direction_backward(xp, attrs, x, weights, cache, d_out, dh, dc, reverse, masks):
    """BPTT for one direction; returns (dx, (dWx, dWh, dbx, dbh, dWr or None), dh0, dc0)."""
    mode = attrs["mode"]
    wx, wh, bx, bh, wr = weights
    t_len, n, _ = x.shape
    g = _GATES[mode]
    hdim = wx.shape[0] // g
    dax = xp.empty((t_len, n, g * hdim), dtype=x.dtype)
    dah = xp.empty_like(dax) if mode == "gru" else dax
    dwr = xp.zeros_like(wr) if wr is not None else None
    steps = range(t_len) if reverse else range(t_len - 1, -1, -1)
    lo, hi = attrs["lstm_state_clip_min"], attrs["lstm_state_clip_max"]
    for t in steps:
        dh = dh + d_out[t]
        carry_h = carry_c = None
        if masks is not None:  # a padded step passed the states through: their gradients go straight back
            m = masks[t]
            carry_h, dh = (1 - m) * (dh - d_out[t]), m * dh
            if dc is not None:
                carry_c, dc = (1 - m) * dc, m * dc
        h_prev = cache["h_prev"][t]
        if mode == "lstm":
            if wr is not None:
                dwr += dh.T @ cache["h_full"][t]
                dh = dh @ wr
            i_g, f_g, g_g, o_g = cache["gates"][t]
            c = cache["c"][t]
            tc = xp.tanh(c)
            dc = dc + dh * o_g * (1 - tc * tc)
            if lo is not None or hi is not None:  # no gradient through a clipped cell state
                dc = dc * ((c > (lo if lo is not None else -np.inf)) & (c < (hi if hi is not None else np.inf)))
            da = dax[t]
            da[:, :hdim] = dc * g_g * i_g * (1 - i_g)
            da[:, hdim:2 * hdim] = dc * cache["c_prev"][t] * f_g * (1 - f_g)
            da[:, 2 * hdim:3 * hdim] = dc * i_g * (1 - g_g * g_g)
            da[:, 3 * hdim:] = dh * tc * o_g * (1 - o_g)
            dc = dc * f_g
            dh = da @ wh
        elif mode == "gru":
            r, z, nn = cache["gates"][t]
            dn = dh * (1 - z) * (1 - nn * nn)
            dz = dh * (h_prev - nn) * z * (1 - z)
            dr = dn * cache["hn"][t] * r * (1 - r)
            dax[t, :, :hdim] = dr
            dax[t, :, hdim:2 * hdim] = dz
            dax[t, :, 2 * hdim:] = dn
            dah[t, :, :2 * hdim] = dax[t, :, :2 * hdim]
            dah[t, :, 2 * hdim:] = dn * r
            dh = dh * z + dah[t] @ wh
        else:
            (h,) = cache["gates"][t]
            da = dh * ((h > 0) if mode == "rnn_relu" else (1 - h * h))
            dax[t] = da
            dh = da @ wh
        if carry_h is not None:
            dh = dh + carry_h
            if carry_c is not None:
                dc = dc + carry_c
    flat_x = x.reshape(t_len * n, -1)
    dax2 = dax.reshape(t_len * n, -1)
    dah2 = dah.reshape(t_len * n, -1)
    grads = (dax2.T @ flat_x, dah2.T @ cache["h_prev"].reshape(t_len * n, -1), dax2.sum(axis=0),
             dah2.sum(axis=0), dwr)
    dx = (dax2 @ wx).reshape(t_len, n, -1)
    return dx, grads, dh, dc


# -- whole network -----------------------------------------------------------------
def _network_forward(xp, attrs, x, flat, h0, c0, mask, lengths):
    """(output, hy, cy, per-layer caches, step masks) of the stacked (bi)directional network."""
    layers, dirs = attrs["num_layers"], _dirs(attrs)
    weights = unpack_params(attrs, flat, x.shape[2])
    masks = _step_masks(xp, lengths, x.shape[0], x.dtype)
    hy = xp.empty_like(h0)
    cy = xp.empty_like(c0) if c0 is not None else None
    caches, layer_in = [], x
    for layer in range(layers):
        outs, layer_cache = [], []
        for d in range(dirs):
            k = layer * dirs + d
            o, h_t, c_t, cache = _direction_forward(xp, attrs, layer_in, weights[(layer, d)], h0[k],
                                                    c0[k] if c0 is not None else None, d == 1, masks)
            outs.append(o)
            layer_cache.append(cache)
            hy[k] = h_t
            if cy is not None:
                cy[k] = c_t
        caches.append((layer_in, layer_cache))
        layer_out = outs[0] if dirs == 1 else xp.concatenate(outs, axis=2)
        if mask is not None and layer < layers - 1:
            layer_out = layer_out * mask[layer]
        layer_in = layer_out
    return layer_in, hy, cy, caches, masks


def _draw_mask(ctx, attrs, shape, dtype):
    p = attrs["p"]
    if not ctx.is_train:
        return ctx.xp.ones(shape, dtype=dtype)
    if ctx.rng is None:
        raise OperatorError("RNN: dropout needs the 'rng' resource")
    keep = ctx.rng.random(shape, dtype=np.float32) >= np.float32(p)
    return ctx.xp.asarray(keep, dtype=dtype) / dtype.type(1 - p)


def _lengths(xp, attrs, seq, t_len):
    """The per-sequence lengths as integers, checked to lie in [1, T]."""
    if not attrs["use_sequence_length"]:
        return None
    lengths = xp.asarray(seq).astype(np.int64)
    if lengths.size and (int(lengths.min()) < 1 or int(lengths.max()) > t_len):
        raise OperatorError(f"RNN: sequence_length values must be in [1, {t_len}] (the sequence length), "
                            f"got {xp.asnumpy(lengths).tolist() if hasattr(xp, 'asnumpy') else lengths.tolist()}")
    return lengths


@float32_on_cpu
def _forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    named = dict(zip(_inputs(attrs), inputs))
    x, flat, h0 = named["data"], named["parameters"], named["state"]
    c0 = named.get("state_cell")
    lengths = _lengths(xp, attrs, named.get("sequence_length"), x.shape[0])
    mask = None
    if _has_mask(attrs):
        mask = _draw_mask(ctx, attrs, outputs[-1].shape, outputs[-1].dtype)
        outputs[-1][...] = mask
    out, hy, cy, _, _ = _network_forward(xp, attrs, x, flat, h0, c0, mask, lengths)
    outputs[0][...] = out
    if attrs["state_outputs"]:
        outputs[1][...] = hy
        if attrs["mode"] == "lstm":
            outputs[2][...] = cy


def _backward_layout(attrs):
    """Names of _backward_RNN's inputs."""
    lstm = attrs["mode"] == "lstm"
    names = ["data", "parameters", "state"] + (["state_cell"] if lstm else [])
    if attrs["use_sequence_length"]:
        names.append("sequence_length")
    names.append("out_grad")
    if attrs["state_outputs"]:
        names += ["hy_grad"] + (["cy_grad"] if lstm else [])
    if _has_mask(attrs):
        names.append("dropout_mask")
    return names


def _backward_outputs(attrs):
    return (["data_grad", "parameters_grad", "state_grad"] +
            (["state_cell_grad"] if attrs["mode"] == "lstm" else []))


@float32_on_cpu
def _backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    named = dict(zip(_backward_layout(attrs), inputs))
    x, flat, h0 = named["data"], named["parameters"], named["state"]
    c0 = named.get("state_cell")
    mask = named.get("dropout_mask")
    lengths = _lengths(xp, attrs, named.get("sequence_length"), x.shape[0])
    layers, dirs = attrs["num_layers"], _dirs(attrs)
    _, _, _, caches, masks = _network_forward(xp, attrs, x, flat, h0, c0, mask, lengths)
    weights = unpack_params(attrs, flat, x.shape[2])
    dflat = xp.zeros_like(flat)
    dweights = unpack_params(attrs, dflat, x.shape[2])   # views: writing them fills dflat
    dh0 = xp.zeros_like(h0)
    dc0 = xp.zeros_like(c0) if c0 is not None else None
    hy_grad = named.get("hy_grad")
    cy_grad = named.get("cy_grad")
    rdim = _rec(attrs)
    d_layer = named["out_grad"]
    for layer in range(layers - 1, -1, -1):
        if mask is not None and layer < layers - 1:
            d_layer = d_layer * mask[layer]
        layer_in, layer_cache = caches[layer]
        d_in = None
        for d in range(dirs):
            k = layer * dirs + d
            dh = hy_grad[k] if hy_grad is not None else xp.zeros_like(h0[k])
            dc = None
            if c0 is not None:
                dc = cy_grad[k] if cy_grad is not None else xp.zeros_like(c0[k])
            d_out = d_layer[:, :, d * rdim:(d + 1) * rdim]
            dx, grads, dh_0, dc_0 = _direction_backward(xp, attrs, layer_in, weights[(layer, d)],
                                                        layer_cache[d], d_out, dh, dc, d == 1, masks)
            for view, gval in zip(dweights[(layer, d)], grads):
                if view is not None:
                    view[...] = gval
            dh0[k] = dh_0
            if dc0 is not None:
                dc0[k] = dc_0
            d_in = dx if d_in is None else d_in + dx
        d_layer = d_in
    outputs[0][...] = d_layer
    outputs[1][...] = dflat
    outputs[2][...] = dh0
    if dc0 is not None:
        outputs[3][...] = dc0


def _gradient_inputs(attrs, inputs, outputs, out_grads):
    n_in = len(_inputs(attrs))
    arrays = list(inputs[:n_in]) + [out_grads[0]]
    if attrs["state_outputs"]:
        arrays += [out_grads[1]] + ([out_grads[2]] if attrs["mode"] == "lstm" else [])
    if _has_mask(attrs):
        arrays.append(outputs[-1])
    return arrays


def _gradient_flags(attrs):
    """Gradients for data, parameters and states; none for sequence_length (integers in effect)."""
    return [True] * len(_backward_outputs(attrs)) + ([False] if attrs["use_sequence_length"] else [])


def _backward_infer_shape(attrs, in_shapes):
    return in_shapes, list(in_shapes[:len(_backward_outputs(attrs))])


register(OpDef(
    name="RNN", attrs=_ATTRS, inputs=_inputs, outputs=_outputs, num_visible_outputs=_visible,
    infer_shape=_infer_shape, infer_type=_infer_type,
    kernels={"any": _forward}, resources=("rng",), expensive=True,
    gradient=backward_via("_backward_RNN", _gradient_inputs, _gradient_flags),
    doc="Fused multi-layer (bidirectional) RNN/LSTM/GRU over TNC data with MXNet's flat parameter layout."))
register(OpDef(
    name="_backward_RNN", attrs=_ATTRS, inputs=_backward_layout, outputs=_backward_outputs,
    infer_shape=_backward_infer_shape,
    kernels={"any": _backward},
    doc="Gradients of RNN by backpropagation through time (recomputes the forward pass)."))
def _param_concat_backward_infer(attrs, in_shapes, out_shapes):
    """As Concat's, but several inputs of unknown length share what is left equally: the first layer's
    i2h weights of both directions, the only unknown ones, have one size (MXNet's RNNParamConcatShape)."""
    out = out_shapes[0]
    unknown = [k for k, s in enumerate(in_shapes) if s is None or s[0] is None]
    if out is None or out[0] is None or len(unknown) < 2 or any(s is not None and len(s) != 1 for s in in_shapes):
        return _concat_backward_infer(attrs, in_shapes, out_shapes)
    rest = out[0] - sum(s[0] for k, s in enumerate(in_shapes) if k not in unknown)
    if rest <= 0 or rest % len(unknown):
        raise ShapeError(f"_rnn_param_concat: output length {out[0]} leaves {rest} for {len(unknown)} inputs of "
                         "unknown length")
    return [(rest // len(unknown),) if k in unknown else s for k, s in enumerate(in_shapes)]


register(OpDef(
    name="_rnn_param_concat", attrs=_CONCAT_ATTRS, inputs=_concat_args, key_var_num_args="num_args",
    infer_shape=_concat_infer, infer_shape_backward=_param_concat_backward_infer,
    infer_type=same_type("_rnn_param_concat"), kernels={"any": _concat},
    gradient=lambda F, a, i, o, g: list(F._backward_Concat(g[0], *i, **a)) if a["num_args"] > 1
    else [F._backward_Concat(g[0], *i, **a)],
    doc="Concat of the flattened RNN weights and biases into the RNN op's parameter vector (MXNet's "
        "_rnn_param_concat); an input of unknown length takes what the output's length leaves."))
