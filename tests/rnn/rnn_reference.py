"""numpy references for the RNN tests: one step of each cell, and binding helpers."""
import numpy as np

import ember as mx


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def rnn_step(x, h, p, prefix, activation=np.tanh):
    return activation(x @ p[prefix + "i2h_weight"].T + p[prefix + "i2h_bias"]
                      + h @ p[prefix + "h2h_weight"].T + p[prefix + "h2h_bias"])


def lstm_step(x, h, c, p, prefix):
    """MXNet's LSTM: gates i, f, c (candidate), o in that order along the 4H axis."""
    g = x @ p[prefix + "i2h_weight"].T + p[prefix + "i2h_bias"] + h @ p[prefix + "h2h_weight"].T \
        + p[prefix + "h2h_bias"]
    i, f, cand, o = np.split(g, 4, axis=1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(cand)
    return sigmoid(o) * np.tanh(c), c


def gru_step(x, h, p, prefix):
    """cuDNN's GRU: n = tanh(x_n + r * (W_hn h + b_hn))."""
    gi = x @ p[prefix + "i2h_weight"].T + p[prefix + "i2h_bias"]
    gh = h @ p[prefix + "h2h_weight"].T + p[prefix + "h2h_bias"]
    ir, iz, i_n = np.split(gi, 3, axis=1)
    hr, hz, h_n = np.split(gh, 3, axis=1)
    r, z = sigmoid(ir + hr), sigmoid(iz + hz)
    n = np.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


def random_params(sym, shapes, rng, scale=0.5):
    """Random float32 values for every argument of `sym` not given in `shapes`' values."""
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    return {name: rng.uniform(-scale, scale, s).astype(np.float32)
            for name, s in zip(sym.list_arguments(), arg_shapes)}


def run(sym, values, is_train=False):
    """Forward `sym` with numpy `values` for its arguments; outputs as numpy arrays."""
    args = {k: mx.nd.array(v) for k, v in values.items()}
    ex = sym.bind(mx.cpu(), args)
    return [o.asnumpy() for o in ex.forward(is_train=is_train)]
