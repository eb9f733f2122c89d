"""The RNN op's backward as it was before the forward kept a reserve: it recomputes the forward
(one step at a time, allocating per step) and runs BPTT on that.  Kept only as the reference the
reserve-reusing kernel in ember/ops/nn_rnn.py is checked against (test_nn_rnn_reserve.py)."""
import numpy as np

from ember.ops._nn_util import sigmoid
from ember.ops.nn_rnn import _GATES, _backward_layout, _dirs, _lengths, _rec, _step_masks, unpack_params


def _clip(xp, c, attrs):
    lo, hi = attrs["lstm_state_clip_min"], attrs["lstm_state_clip_max"]
    if lo is None and hi is None:
        return c
    return xp.clip(c, lo if lo is not None else -np.inf, hi if hi is not None else np.inf)


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



def recompute_backward(ctx, attrs, inputs, outputs):
    """The backward as it was: run the forward again for its caches, then BPTT."""
    xp = ctx.xp
    named = dict(zip(_backward_layout(attrs), inputs))  # the reserve, last, goes unused
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
