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
A hidden last output, `reserve` (MXNet's reserve space; float32 for float16 data), keeps what the
forward computed for the backward: every step's activated gates and the states around it
(`_reserve_pieces`), so `_backward_RNN` runs BPTT without recomputing the forward.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from ..base import OperatorError, ShapeError
from ..engine import native
from ._nn_util import call_op, float32_on_cpu, float_types, known, matmul_into, merge
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

_BACKWARD_ATTRS = dict(_ATTRS, no_data_grad=Attr("bool", False, doc="skip the data gradient (nobody needs it)"))


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


def _apart(attrs) -> bool:
    """Whether these are `_RNN_apart`'s attributes (each parameter array an input of its own)."""
    return attrs.get("num_params") is not None


def _param_names(attrs):
    """The parameter inputs: "parameters" (the flat vector), or `_RNN_apart`'s one name per array."""
    return [f"parameters{i}" for i in range(attrs["num_params"])] if _apart(attrs) else ["parameters"]


def _named(attrs, names, arrays):
    """{name: array}, `_RNN_apart`'s parameter arrays gathered in order as the list "parameters"."""
    named = dict(zip(names, arrays))
    if _apart(attrs):
        named["parameters"] = [named.pop(n) for n in _param_names(attrs)]
    return named


def _astype(params, dtype):
    """The flat vector, or each array of a list, cast to dtype."""
    return [a.astype(dtype) for a in params] if isinstance(params, list) else params.astype(dtype)


def _inputs(attrs):
    names = ["data", *_param_names(attrs), "state"]
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
    names.append("reserve")  # hidden: the forward's gates and states, kept for the backward
    return names


def _visible(attrs):
    return len(_outputs(attrs)) - (2 if _has_mask(attrs) else 1)


def _param_layout(attrs: dict, input_size: int) -> List[Tuple[Tuple[int, int], int, Tuple[int, int]]]:
    """[((layer, direction), slot, (rows, cols))] of every parameter in the flat vector's order: for
    each layer and direction the weights (slot 0 W_i2h, 1 W_h2h, 2 W_h2r), then for each the biases
    (3 b_i2h, 4 b_h2h, as one row)."""
    g, h, r, dirs = _GATES[attrs["mode"]], attrs["state_size"], _rec(attrs), _dirs(attrs)
    keys = [(layer, d) for layer in range(attrs["num_layers"]) for d in range(dirs)]
    layout = []
    for key in keys:
        in_l = input_size if key[0] == 0 else dirs * r
        layout += [(key, 0, (g * h, in_l)), (key, 1, (g * h, r))]
        if attrs["projection_size"]:
            layout.append((key, 2, (r, h)))
    for key in keys:
        layout += [(key, 3, (1, g * h)), (key, 4, (1, g * h))]
    return layout


def param_size(attrs: dict, input_size: int) -> int:
    """Length of the flat parameter vector."""
    return sum(rows * cols for _, _, (rows, cols) in _param_layout(attrs, input_size))


def unpack_params(attrs: dict, params, input_size: int) -> Dict[Tuple[int, int], Tuple]:
    """{(layer, direction): (W_i2h, W_h2h, b_i2h, b_h2h, W_h2r or None)} as views into the flat vector,
    or into the list of separate parameter arrays (`_RNN_apart`), one per parameter in the same order."""
    parts: Dict[Tuple[int, int], list] = {}
    pos = 0
    for k, (key, slot, (rows, cols)) in enumerate(_param_layout(attrs, input_size)):
        if isinstance(params, list):
            view = params[k].reshape(rows, cols)
        else:
            view = params[pos:pos + rows * cols].reshape(rows, cols)
            pos += rows * cols
        parts.setdefault(key, [None] * 5)[slot] = view[0] if slot >= 3 else view
    return {key: (p[0], p[1], p[3], p[4], p[2]) for key, p in parts.items()}


def params_fit(attrs: dict, sizes) -> bool:
    """Whether arrays of these sizes (element counts) are the network's parameters one by one, in the
    flat vector's order, for some input size (the first layer's W_i2h all G*H*I for one I)."""
    layout = _param_layout(attrs, 1)
    if len(sizes) != len(layout):
        return False
    firsts = set()
    for size, (key, slot, (rows, cols)) in zip(sizes, layout):
        if key[0] == 0 and slot == 0:
            firsts.add(size)
            if size <= 0 or size % rows:
                return False
        elif size != rows * cols:
            return False
    return len(firsts) == 1


def _apart_shape(given, size: int, k: int):
    """Parameter array k of `_RNN_apart`: any shape of `size` elements; one unknown dim is filled."""
    if given is None or len(given) == 0:
        return given
    given = tuple(given)
    unknown = [i for i, v in enumerate(given) if v in (0, None)]
    rest = int(np.prod([v for v in given if v not in (0, None)]))
    if len(unknown) == 1 and rest and size % rest == 0:
        given = tuple(size // rest if i == unknown[0] else v for i, v in enumerate(given))
    elif not unknown and rest != size:
        raise ShapeError(f"RNN: parameter array {k} has shape {given} ({rest} elements), the network needs "
                         f"{size}")
    return given


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
    p = len(_param_names(attrs))
    if not _apart(attrs):
        ins[1] = merge("RNN", "parameters", ins[1], (param_size(attrs, i),))
    else:
        layout = _param_layout(attrs, i)
        if len(layout) != p:
            raise ShapeError(f"RNN: {p} parameter arrays given, the network has {len(layout)}")
        for k, (_, _, (rows, cols)) in enumerate(layout):
            ins[1 + k] = _apart_shape(ins[1 + k], rows * cols, k)
    ins[1 + p] = merge("RNN", "state", ins[1 + p], (layers * dirs, n, r))
    if attrs["mode"] == "lstm":
        ins[2 + p] = merge("RNN", "state_cell", ins[2 + p], (layers * dirs, n, h))
    if attrs["use_sequence_length"]:
        ins[-1] = merge("RNN", "sequence_length", ins[-1], (n,))
    outs = [(t, n, dirs * r)]
    if attrs["state_outputs"]:
        outs.append((layers * dirs, n, r))
        if attrs["mode"] == "lstm":
            outs.append((layers * dirs, n, h))
    if _has_mask(attrs):
        outs.append((layers - 1, t, n, dirs * r))
    outs.append((reserve_size(attrs, t, n),))
    return ins, outs


def _infer_type(attrs, in_dtypes):
    """Every input and output shares the data's float dtype, except sequence_length (any number type)."""
    n_out = len(_outputs(attrs))
    if not attrs["use_sequence_length"]:
        ins, outs, _ = float_types("RNN", attrs, in_dtypes, n_out)
    else:
        ins, outs, _ = float_types("RNN", attrs, in_dtypes[:-1], n_out)
        ins = ins + [in_dtypes[-1] if in_dtypes[-1] is not None else ins[0]]
    if outs[-1] is not None and np.dtype(outs[-1]) == np.float16:
        outs[-1] = np.dtype(np.float32)  # the reserve: float16 gates would cost the gradients precision
    return ins, outs


# -- the reserve: what the forward keeps for the backward (MXNet's reserve space) ------------
def _reserve_pieces(attrs, t_len, n):
    """[(key, name, shape)] in the reserve's order; key is (layer, direction), or (layer, None) for
    what the layer's directions share.

    Per layer and direction: "gates" the activated gates, (T, N, G*H) for a GRU (r, z, n) and the
    vanilla RNN (its new state before any sequence mask), gate-major (T, 4, N, H) for an LSTM (i, f, g,
    o: the backward's whole-sequence derivative math then runs on contiguous blocks) and "hseq" (T+1, N, R) the recurrent state
    around every step (`_seq_views`); an LSTM also keeps "cseq" (T+1, N, H) the cell state likewise,
    "tc" (T, N, H) tanh of each new cell state, "cnew" (T, N, H) the new cell state before the
    sequence mask (with `use_sequence_length` only; else it is cseq's) and "hfull" (T, N, H) the state
    before the projection (LSTMP only); a GRU keeps "hn" (T, N, H) = W_hn h + b_hn.  From the second
    layer on, (layer, None) "input" (T, N, dirs*R): the layer's input, after dropout."""
    mode, h, r, dirs = attrs["mode"], attrs["state_size"], _rec(attrs), _dirs(attrs)
    pieces = []
    for layer in range(attrs["num_layers"]):
        if layer:
            pieces.append(((layer, None), "input", (t_len, n, dirs * r)))
        for d in range(dirs):
            key = (layer, d)
            gates = (t_len, 4, n, h) if mode == "lstm" else (t_len, n, _GATES[mode] * h)
            pieces += [(key, "gates", gates), (key, "hseq", (t_len + 1, n, r))]
            if mode == "lstm":
                pieces += [(key, "cseq", (t_len + 1, n, h)), (key, "tc", (t_len, n, h))]
                if attrs["use_sequence_length"]:
                    pieces.append((key, "cnew", (t_len, n, h)))
                if attrs["projection_size"]:
                    pieces.append((key, "hfull", (t_len, n, h)))
            elif mode == "gru":
                pieces.append((key, "hn", (t_len, n, h)))
    return pieces


def reserve_size(attrs: dict, t_len: int, n: int) -> int:
    """Length of the flat reserve the forward fills for the backward (T steps, batch N)."""
    return sum(int(np.prod(shape)) for _, _, shape in _reserve_pieces(attrs, t_len, n))


def _reserve_views(attrs, flat, t_len, n):
    """{key: {name: view}} into the flat reserve (see _reserve_pieces)."""
    views, pos = {}, 0
    for key, name, shape in _reserve_pieces(attrs, t_len, n):
        size = int(np.prod(shape))
        views.setdefault(key, {})[name] = flat[pos:pos + size].reshape(shape)
        pos += size
    return views


def _seq_views(seq, t_len, reverse):
    """(before, after, first, last) of a (T+1, N, .) state sequence: views (T, N, .) of the state before
    and after every step t, and the indices of the initial and the final state.  The forward direction
    keeps h_0 at 0 and the state after step t at t+1; the reverse one h_0 at T and the state after t at t,
    so both views are contiguous and before[t] is always step t's input state."""
    if reverse:
        return seq[1:], seq[:t_len], t_len, 0
    return seq[:t_len], seq[1:], 0, t_len


def _sigmoid_(xp, a):
    """a = 1 / (1 + e^-a) in place; e^-a overflowing to inf (a < -88) gives the right 0."""
    xp.negative(a, out=a)
    xp.exp(a, out=a)
    a += 1
    xp.reciprocal(a, out=a)


def _clip_bounds(attrs):
    lo, hi = attrs["lstm_state_clip_min"], attrs["lstm_state_clip_max"]
    if lo is None and hi is None:
        return None
    return (lo if lo is not None else -np.inf, hi if hi is not None else np.inf)


def _step_masks(xp, lengths, t_len, dtype):
    """(T, N, 1) 1/0 masks of the valid steps of each sequence, or None when all are valid."""
    if lengths is None:
        return None
    steps = xp.arange(t_len).reshape(t_len, 1, 1)
    return (steps < lengths.reshape(1, -1, 1)).astype(dtype)


# -- one direction of one layer ------------------------------------------------------
def _transposed(xp, w):
    """w.T as a C-contiguous array.  numpy copies a transposed view in one strided pass that misses
    the cache on every element from ~256 KiB on; bands of rows copied in turn stay in cache (a
    (1024, 256) weight 324 -> 135 us, (4096, 1024) 30 -> 5 ms)."""
    rows = w.shape[0]
    if xp is not np or w.size < 1 << 16:
        return xp.ascontiguousarray(w.T)
    band = 16 if w.size >= 1 << 19 else 32
    out = np.empty((w.shape[1], rows), dtype=w.dtype)
    for i in range(0, rows, band):
        out[:, i:i + band] = w[i:i + band].T
    return out


def _native_lstm(xp, attrs, x, masks) -> bool:
    """Whether an LSTM direction may run its steps natively (native.lstm_forward_f32): float32 numpy
    data without sequence masks, cell clipping or a projection."""
    return (xp is np and x.dtype == np.float32 and masks is None and _clip_bounds(attrs) is None
            and not attrs["projection_size"])


def _lstm_forward_native(x, weights, h0, c0, reverse, res, out) -> bool:
    """_direction_forward of an LSTM whose steps run natively (one call for the whole sequence); False,
    the reserve's contents undefined, where the arrays do not fit (the numpy code runs then)."""
    wx, wh, bx, bh, _ = weights
    t_len, n, _ = x.shape
    gates = res["gates"]
    pre = gates.reshape(t_len * n, -1)   # step t's input projection until the step replaces it by its gates
    matmul_into(np, x.reshape(t_len * n, -1), wx.T, pre)
    hseq, cseq = res["hseq"], res["cseq"]
    _, after, first, _ = _seq_views(hseq, t_len, reverse)
    hseq[first] = h0
    cseq[first] = c0
    if not native.lstm_forward_f32(wh, bx + bh, gates, cseq, res["tc"], hseq, reverse):
        return False
    out[...] = after
    return True


def _direction_forward(xp, attrs, x, weights, h0, c0, reverse, masks, res, out):
    """Run one direction over x (T, N, I): the outputs go to `out` (T, N, R), what the backward needs
    to the reserve views `res`; returns the final (h, c) (views into the reserve).

    masks: (T, N, 1) valid-step masks or None; a masked step outputs 0 and keeps the states."""
    mode = attrs["mode"]
    wx, wh, bx, bh, wr = weights
    t_len, n, _ = x.shape
    if mode == "lstm" and _native_lstm(xp, attrs, x, masks) and _lstm_forward_native(x, weights, h0, c0, reverse,
                                                                                       res, out):
        return res["hseq"][0 if reverse else t_len], res["cseq"][0 if reverse else t_len]
    hdim = wx.shape[0] // _GATES[mode]
    gates = res["gates"]
    wh_t = _transposed(xp, wh)   # the step GEMM runs faster on a contiguous right operand
    bias = bx + bh
    if mode == "gru":
        bias[2 * hdim:] = bx[2 * hdim:]  # b_hn stays inside r * (W_hn h + b_hn)
    elif mode == "lstm":
        # sigmoid(a) = (tanh(a / 2) + 1) / 2: the i, f, o rows of the weights and biases are halved up
        # front, so each step's gates take one tanh over the whole contiguous row and one affine map
        scale = xp.full((4 * hdim,), 0.5, dtype=x.dtype)
        scale[2 * hdim:3 * hdim] = 1
        shift = 1 - scale
        wx = wx * scale[:, None]
        wh_t *= scale
        bias *= scale
    # every step's input projection as one GEMM, with the biases, into the gates' memory read as
    # (T, N, G*H): step t's region holds its pre-activations until the step replaces them by the gates
    pre = gates.reshape(t_len, n, -1)
    matmul_into(xp, x.reshape(t_len * n, -1), wx.T, pre.reshape(t_len * n, -1))
    pre += bias
    hseq = res["hseq"]
    before, after, first, last = _seq_views(hseq, t_len, reverse)
    hseq[first] = h0
    ah = xp.empty((n, wh.shape[0]), dtype=x.dtype)
    tmp = xp.empty((n, hdim), dtype=x.dtype)
    steps = range(t_len - 1, -1, -1) if reverse else range(t_len)
    c_last = None
    if mode == "lstm":
        cseq, tc, hfull = res["cseq"], res["tc"], res.get("hfull")
        c_before, c_after, _, _ = _seq_views(cseq, t_len, reverse)
        cnew = res.get("cnew", c_after)
        cseq[first] = c0
        bounds = _clip_bounds(attrs)
        for t in steps:
            xp.matmul(before[t], wh_t, out=ah)
            ah += pre[t]
            xp.tanh(ah, out=ah)
            ah *= scale
            ah += shift
            g_t = gates[t]
            g_t[...] = ah.reshape(n, 4, hdim).transpose(1, 0, 2)   # pre[t] is consumed: its memory takes the gates
            i_g, f_g, g_g, o_g = g_t
            c_t = cnew[t]
            xp.multiply(f_g, c_before[t], out=c_t)
            xp.multiply(i_g, g_g, out=tmp)
            c_t += tmp
            if bounds is not None:
                xp.clip(c_t, bounds[0], bounds[1], out=c_t)
            xp.tanh(c_t, out=tc[t])
            if hfull is None:
                xp.multiply(o_g, tc[t], out=after[t])
            else:
                xp.multiply(o_g, tc[t], out=hfull[t])
                xp.matmul(hfull[t], wr.T, out=after[t])
            if masks is not None:  # padded steps carry the states over unchanged
                _carry(xp, masks[t], before[t], after[t], after[t])
                _carry(xp, masks[t], c_before[t], cnew[t], c_after[t])
        c_last = cseq[last]
    elif mode == "gru":
        hn = res["hn"]
        for t in steps:
            a = gates[t]
            xp.matmul(before[t], wh_t, out=ah)
            a[:, :2 * hdim] += ah[:, :2 * hdim]
            _sigmoid_(xp, a[:, :2 * hdim])
            xp.add(ah[:, 2 * hdim:], bh[2 * hdim:], out=hn[t])
            xp.multiply(a[:, :hdim], hn[t], out=tmp)
            nn = a[:, 2 * hdim:]
            nn += tmp
            xp.tanh(nn, out=nn)
            xp.subtract(before[t], nn, out=tmp)       # h' = (1 - z) n + z h = n + z (h - n)
            tmp *= a[:, hdim:2 * hdim]
            xp.add(nn, tmp, out=after[t])
            if masks is not None:
                _carry(xp, masks[t], before[t], after[t], after[t])
    else:
        relu = mode == "rnn_relu"
        for t in steps:
            a = gates[t]
            xp.matmul(before[t], wh_t, out=ah)
            a += ah
            if relu:
                xp.maximum(a, 0, out=a)
            else:
                xp.tanh(a, out=a)
            if masks is None:
                after[t] = a
            else:
                _carry(xp, masks[t], before[t], a, after[t])
    if masks is None:
        out[...] = after
    else:
        xp.multiply(after, masks, out=out)
    return hseq[last], c_last


def _carry(xp, m, old, new, dest):
    """dest = m * new + (1 - m) * old = old + m (new - old): a padded step (m = 0) keeps the state."""
    xp.subtract(new, old, out=dest)
    dest *= m
    dest += old


def _add_step_grad(xp, dh, d_out_t, m, carry_h) -> None:
    """dh += a step's output gradient.  At a padded step (mask m 0) the states passed straight
    through, so their gradient goes back around the cell: that part is kept in carry_h (added back
    after the step) and dh keeps only the unpadded rows'."""
    dh += d_out_t
    if m is not None:
        xp.subtract(dh, d_out_t, out=carry_h)
        carry_h *= 1 - m
        dh *= m


def _lstm_backward_native(wh, res, d_out, dh, dc, dax, reverse) -> bool:
    """The step loop of an LSTM's BPTT run natively (one call for the whole sequence): fills dax
    (T, N, 4H) and turns dh, dc into the initial states' gradients.  False, nothing changed, where
    the arrays do not fit (the numpy code runs then)."""
    return native.lstm_backward_f32(wh, res["gates"], res["cseq"], res["tc"], np.ascontiguousarray(d_out), dh, dc,
                                    dax, reverse)


def _direction_backward(xp, attrs, x, weights, res, d_out, dh, dc, reverse, masks, dweights, want_dx=True):
    """BPTT for one direction from the reserve `res`; writes the weight and bias gradients into the
    views `dweights` (dWx, dWh, dbx, dbh, dWr or None) and returns (dx, dh0, dc0) (dx None unless
    want_dx).

    dh, dc: the gradients of the final states (not modified)."""
    mode = attrs["mode"]
    wx, wh, bx, bh, wr = weights
    t_len, n, _ = x.shape
    hdim = wx.shape[0] // _GATES[mode]
    gates = res["gates"]
    before, after, _, _ = _seq_views(res["hseq"], t_len, reverse)
    dax = xp.empty((t_len, n, _GATES[mode] * hdim), dtype=x.dtype)
    dah = xp.empty_like(dax) if mode == "gru" else dax
    dh = dh.astype(x.dtype)   # a copy, in the reserve's dtype
    steps = range(t_len) if reverse else range(t_len - 1, -1, -1)
    carry_h = xp.empty_like(dh) if masks is not None else None
    if mode == "lstm":
        dc = dc.astype(x.dtype)
    native_steps = mode == "lstm" and _native_lstm(xp, attrs, x, masks) and \
        _lstm_backward_native(wh, res, d_out, dh, dc, dax, reverse)
    if native_steps:
        pass   # dax, dh and dc are done; the weight gradients follow
    elif mode == "lstm":
        c_before, c_after, _, _ = _seq_views(res["cseq"], t_len, reverse)
        cnew, tc, hfull = res.get("cnew", c_after), res["tc"], res.get("hfull")
        i_g, f_g, g_g, o_g = gates[:, 0], gates[:, 1], gates[:, 2], gates[:, 3]
        # every step's local derivatives at once (gate-major, so on contiguous blocks): k4[:, :3] multiply
        # dc into da_i, da_f, da_g, k4[:, 3] multiplies dh into da_o, and e (d c / d h through tanh)
        # multiplies dh into dc
        k4 = xp.subtract(1, gates)                  # s (1 - s): the sigmoid gates' derivative
        k4 *= gates
        xp.multiply(g_g, g_g, out=k4[:, 2])         # the tanh gate's: 1 - g^2
        xp.subtract(1, k4[:, 2], out=k4[:, 2])
        k4[:, 0] *= g_g
        k4[:, 1] *= c_before
        k4[:, 2] *= i_g
        k4[:, 3] *= tc
        e = xp.multiply(tc, tc)
        xp.subtract(1, e, out=e)
        e *= o_g
        bounds = _clip_bounds(attrs)
        if bounds is not None:  # no gradient through a clipped cell state
            e_keep = ((cnew > bounds[0]) & (cnew < bounds[1])).astype(x.dtype)
        d_gates = dax.reshape(t_len, n, 4, hdim).transpose(0, 2, 1, 3)   # (T, 4, N, H) view of dax
        tmp = xp.empty_like(dc)
        carry_c = xp.empty_like(dc) if masks is not None else None
        dhr = xp.empty(after.shape, dtype=x.dtype) if wr is not None else None
        dfull = xp.empty_like(dc) if wr is not None else None
        for t in steps:
            m = masks[t] if masks is not None else None
            _add_step_grad(xp, dh, d_out[t], m, carry_h)
            if m is not None:
                xp.multiply(dc, 1 - m, out=carry_c)
                dc *= m
            if wr is not None:
                dhr[t] = dh
                xp.matmul(dh, wr, out=dfull)
                d_hf = dfull
            else:
                d_hf = dh
            xp.multiply(d_hf, e[t], out=tmp)
            dc += tmp
            if bounds is not None:
                dc *= e_keep[t]
            xp.multiply(k4[t, :3], dc, out=d_gates[t, :3])
            xp.multiply(k4[t, 3], d_hf, out=d_gates[t, 3])
            dc *= f_g[t]
            xp.matmul(dax[t], wh, out=dh)
            if masks is not None:
                dh += carry_h
                dc += carry_c
        if wr is not None:
            xp.matmul(dhr.reshape(t_len * n, -1).T, hfull.reshape(t_len * n, -1), out=dweights[4])
    elif mode == "gru":
        hn = res["hn"]
        for t in steps:
            _add_step_grad(xp, dh, d_out[t], masks[t] if masks is not None else None, carry_h)
            a = gates[t]
            r, z, nn = a[:, :hdim], a[:, hdim:2 * hdim], a[:, 2 * hdim:]
            dn = dh * (1 - z) * (1 - nn * nn)
            dax[t, :, :hdim] = dn * hn[t] * r * (1 - r)
            dax[t, :, hdim:2 * hdim] = dh * (before[t] - nn) * z * (1 - z)
            dax[t, :, 2 * hdim:] = dn
            dah[t, :, :2 * hdim] = dax[t, :, :2 * hdim]
            xp.multiply(dn, r, out=dah[t, :, 2 * hdim:])
            dh *= z
            dh += dah[t] @ wh
            if masks is not None:
                dh += carry_h
    else:
        relu = mode == "rnn_relu"
        for t in steps:
            _add_step_grad(xp, dh, d_out[t], masks[t] if masks is not None else None, carry_h)
            h = gates[t]
            if relu:
                xp.multiply(dh, h > 0, out=dax[t])
            else:
                xp.multiply(h, h, out=dax[t])
                xp.subtract(1, dax[t], out=dax[t])
                dax[t] *= dh
            xp.matmul(dax[t], wh, out=dh)
            if masks is not None:
                dh += carry_h
    # the weight gradients of all steps as single GEMMs
    dax2 = dax.reshape(t_len * n, -1)
    dah2 = dah.reshape(t_len * n, -1)
    dwx, dwh, dbx, dbh, _ = dweights
    matmul_into(xp, dax2.T, x.reshape(t_len * n, -1), dwx)
    matmul_into(xp, dah2.T, before.reshape(t_len * n, -1), dwh)
    xp.sum(dax2, axis=0, out=dbx)
    if dah is dax:   # an LSTM's or plain RNN's biases have the same gradient: summed once
        dbh[...] = dbx
    else:
        xp.sum(dah2, axis=0, out=dbh)
    dx = (dax2 @ wx).reshape(t_len, n, -1) if want_dx else None
    return dx, dh, dc


# -- whole network -----------------------------------------------------------------
def _network_forward(xp, attrs, x, flat, h0, c0, mask, lengths, reserve, out, hy, cy):
    """Run the stacked (bi)directional network into `out`, the final states into hy / cy (when not
    None) and what the backward needs into the flat `reserve`."""
    layers, dirs, rdim = attrs["num_layers"], _dirs(attrs), _rec(attrs)
    t_len, n, _ = x.shape
    weights = unpack_params(attrs, flat, x.shape[2])
    masks = _step_masks(xp, lengths, t_len, x.dtype)
    res = _reserve_views(attrs, reserve, t_len, n)
    layer_in = x
    for layer in range(layers):
        layer_out = out if layer == layers - 1 else res[(layer + 1, None)]["input"]
        for d in range(dirs):
            k = layer * dirs + d
            h_t, c_t = _direction_forward(xp, attrs, layer_in, weights[(layer, d)], h0[k],
                                          c0[k] if c0 is not None else None, d == 1, masks,
                                          res[(layer, d)], layer_out[:, :, d * rdim:(d + 1) * rdim])
            if hy is not None:
                hy[k] = h_t
            if cy is not None:
                cy[k] = c_t
        if mask is not None and layer < layers - 1:
            layer_out *= mask[layer]
        layer_in = layer_out


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
    named = _named(attrs, _inputs(attrs), inputs)
    outs = dict(zip(_outputs(attrs), outputs))
    x, flat, h0 = named["data"], named["parameters"], named["state"]
    c0 = named.get("state_cell")
    lengths = _lengths(xp, attrs, named.get("sequence_length"), x.shape[0])
    mask = None
    if _has_mask(attrs):
        mask = outs["dropout_mask"]
        mask[...] = _draw_mask(ctx, attrs, mask.shape, mask.dtype)
    reserve = outs["reserve"]
    if reserve.dtype != x.dtype:  # float16 data keeps a float32 reserve, float32_on_cpu hands float32 x
        x, flat, h0 = x.astype(reserve.dtype), _astype(flat, reserve.dtype), h0.astype(reserve.dtype)
        c0 = c0.astype(reserve.dtype) if c0 is not None else None
    with np.errstate(over="ignore"):
        _network_forward(xp, attrs, x, flat, h0, c0, mask, lengths, reserve, outs["output"],
                         outs.get("hy"), outs.get("cy"))


def _backward_layout(attrs):
    """Names of _backward_RNN's inputs."""
    lstm = attrs["mode"] == "lstm"
    names = ["data", *_param_names(attrs), "state"] + (["state_cell"] if lstm else [])
    if attrs["use_sequence_length"]:
        names.append("sequence_length")
    names.append("out_grad")
    if attrs["state_outputs"]:
        names += ["hy_grad"] + (["cy_grad"] if lstm else [])
    if _has_mask(attrs):
        names.append("dropout_mask")
    names.append("reserve")
    return names


def _backward_outputs(attrs):
    return (["data_grad", *[f"{p}_grad" for p in _param_names(attrs)], "state_grad"] +
            (["state_cell_grad"] if attrs["mode"] == "lstm" else []))


@float32_on_cpu
def _backward(ctx, attrs, inputs, outputs, aux):
    """BPTT from the forward's reserve (the gates and states of every step), no recomputation."""
    xp = ctx.xp
    named = _named(attrs, _backward_layout(attrs), inputs)
    x, flat, h0 = named["data"], named["parameters"], named["state"]
    c0 = named.get("state_cell")
    mask = named.get("dropout_mask")
    reserve = named["reserve"]
    lengths = _lengths(xp, attrs, named.get("sequence_length"), x.shape[0])
    layers, dirs, rdim = attrs["num_layers"], _dirs(attrs), _rec(attrs)
    t_len, n, i_size = x.shape
    dt = reserve.dtype
    if x.dtype != dt:
        x, flat = x.astype(dt), _astype(flat, dt)
    masks = _step_masks(xp, lengths, t_len, dt)
    res = _reserve_views(attrs, reserve, t_len, n)
    weights = unpack_params(attrs, flat, i_size)
    p = len(_param_names(attrs))
    given = outputs[1:1 + p]
    dparams = [o if o.dtype == dt and o.flags.c_contiguous else xp.empty(o.shape, dtype=dt) for o in given]
    # views: the backward writes every part of dparams
    dweights = unpack_params(attrs, dparams if _apart(attrs) else dparams[0], i_size)
    hy_grad, cy_grad = named.get("hy_grad"), named.get("cy_grad")
    d_layer = named["out_grad"]
    for layer in range(layers - 1, -1, -1):
        if mask is not None and layer < layers - 1:
            d_layer = d_layer * mask[layer]
        layer_in = x if layer == 0 else res[(layer, None)]["input"]
        want_dx = layer > 0 or not attrs.get("no_data_grad", False)   # the forward's attrs have none
        d_in = None
        for d in range(dirs):
            k = layer * dirs + d
            dh = hy_grad[k] if hy_grad is not None else xp.zeros(h0[k].shape, dtype=dt)
            dc = None
            if c0 is not None:
                dc = cy_grad[k] if cy_grad is not None else xp.zeros(c0[k].shape, dtype=dt)
            dx, dh_0, dc_0 = _direction_backward(xp, attrs, layer_in, weights[(layer, d)], res[(layer, d)],
                                                 d_layer[:, :, d * rdim:(d + 1) * rdim], dh, dc, d == 1,
                                                 masks, dweights[(layer, d)], want_dx)
            outputs[1 + p][k] = dh_0
            if c0 is not None:
                outputs[2 + p][k] = dc_0
            if d_in is None:
                d_in = dx
            elif dx is not None:
                d_in += dx
        d_layer = d_in
    if d_layer is None:  # nobody reads it (MXNet leaves such an output unwritten): zeros, no GEMM
        outputs[0][...] = 0
    else:
        outputs[0][...] = d_layer
    for o, d in zip(given, dparams):
        if d is not o:
            o[...] = d


def _gradient_inputs(attrs, inputs, outputs, out_grads):
    n_in = len(_inputs(attrs))
    arrays = list(inputs[:n_in]) + [out_grads[0]]
    if attrs["state_outputs"]:
        arrays += [out_grads[1]] + ([out_grads[2]] if attrs["mode"] == "lstm" else [])
    if _has_mask(attrs):
        arrays.append(outputs[-2])
    arrays.append(outputs[-1])  # the reserve
    return arrays


def _gradient_flags(attrs):
    """Gradients for data, parameters and states; none for sequence_length (integers in effect)."""
    return [True] * len(_backward_outputs(attrs)) + ([False] if attrs["use_sequence_length"] else [])


def _gradient(F, attrs, inputs, outputs, out_grads, needed=None):
    """Gradients through `_backward_RNN`.  `needed` (per input, from the gradient pass or the tape)
    lets it skip the data gradient's GEMM when nobody wants it (a network's first layer), as MXNet's
    kernel skips an output whose req is null."""
    skip = needed is not None and not needed[0]
    wanted = _gradient_flags(attrs)
    name = "_backward_RNN_apart" if _apart(attrs) else "_backward_RNN"
    res = iter(call_op(F, name, _gradient_inputs(attrs, inputs, outputs, out_grads),
                       dict(attrs, no_data_grad=skip), sum(wanted)))
    grads = [next(res) if w else None for w in wanted]
    return [None] + grads[1:] if skip else grads


def _backward_infer_shape(attrs, in_shapes):
    return in_shapes, list(in_shapes[:len(_backward_outputs(attrs))])


register(OpDef(
    name="RNN", attrs=_ATTRS, inputs=_inputs, outputs=_outputs, num_visible_outputs=_visible,
    infer_shape=_infer_shape, infer_type=_infer_type,
    kernels={"any": _forward}, resources=("rng",), expensive=True, gradient=_gradient, gradient_takes_needed=True,
    doc="Fused multi-layer (bidirectional) RNN/LSTM/GRU over TNC data with MXNet's flat parameter layout."))
register(OpDef(
    name="_backward_RNN", attrs=_BACKWARD_ATTRS, inputs=_backward_layout, outputs=_backward_outputs,
    infer_shape=_backward_infer_shape,
    kernels={"any": _backward},
    doc="Gradients of RNN by backpropagation through time from the forward's reserve (its gates and states)."))
# The RNN op with each parameter array an input of its own, in the flat vector's order: what a compiled
# graph's `_rnn_param_concat` + RNN becomes (symbolic/passes.py, rnn_params_apart), so no step copies
# the weights into the flat vector or the flat gradient back out into the parameters' gradients.
_APART_ATTRS = {"num_params": Attr("int", doc="parameter arrays, in the flat vector's order")}
register(OpDef(
    name="_RNN_apart", attrs=dict(_ATTRS, **_APART_ATTRS), inputs=_inputs, outputs=_outputs,
    num_visible_outputs=_visible, infer_shape=_infer_shape, infer_type=_infer_type,
    kernels={"any": _forward}, resources=("rng",), expensive=True, gradient=_gradient, gradient_takes_needed=True,
    doc="RNN with its parameters as separate arrays (any shapes of the flat layout's sizes), not one vector."))
register(OpDef(
    name="_backward_RNN_apart", attrs=dict(_BACKWARD_ATTRS, **_APART_ATTRS), inputs=_backward_layout,
    outputs=_backward_outputs, infer_shape=_backward_infer_shape, kernels={"any": _backward},
    doc="Gradients of _RNN_apart: _backward_RNN writing each parameter's gradient into its own array."))
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
