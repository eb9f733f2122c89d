"""The one-pass native SGD step (native/update_kernels.h) behind sgd_update / multi_sgd_update on
CPU: the same bits as the numpy code it replaces in every form (one factor, rescale then lr,
clipping, weight decay, in place or not, special values), and numpy's code where it does not fit."""
import numpy as np
import pytest

import ember as mx
from ember.engine import native
from ember.ops import optimizer_updates


def _values(n, seed):
    rs = np.random.RandomState(seed)
    x = (rs.standard_normal(n) * 10.0 ** rs.randint(-6, 6, n)).astype(np.float32)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -3e-39, np.finfo(np.float32).max]
    x[:min(n, 8)] = special[seed % 8:][:n] + special[:max(0, min(n, 8) - (8 - seed % 8))]
    return x


def _update(w, g, numpy_only, monkeypatch, **attrs):
    """mx.nd.sgd_update(w, g) as float32 numpy, by the native kernel or (numpy_only) numpy's code."""
    calls = []
    real = native.sgd_f32

    def spy(*args):
        calls.append(args)
        return False if numpy_only else real(*args)
    monkeypatch.setattr(optimizer_updates.native, "sgd_f32", spy)
    wa = mx.nd.array(w)
    mx.nd.sgd_update(wa, mx.nd.array(g), out=wa, **attrs)
    return wa.asnumpy(), calls


FORMS = [dict(lr=0.01, rescale_grad=1 / 128),                      # one factor: lr * rescale
         dict(lr=0.1, rescale_grad=1 / 3),                         # rescale, then lr
         dict(lr=0.05),                                            # lr only
         dict(lr=0.01, rescale_grad=1 / 64, wd=1e-4),              # weight decay
         dict(lr=0.5, rescale_grad=0.25, clip_gradient=0.3),       # clipping
         dict(lr=0.5, rescale_grad=0.7, clip_gradient=2.0, wd=0.01),
         dict(lr=1.0, rescale_grad=1.0, clip_gradient=1e-3),
         dict(lr=3e-38, rescale_grad=1 / 1024)]                    # a factor in the subnormal range


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("n", [1, 7, 1000, 70_000])  # (past 64 KiB: run without the GIL)
def test_native_step_is_the_numpy_step(form, n, monkeypatch):
    w, g = _values(n, 1), _values(n, 2)
    expected, _ = _update(w, g, True, monkeypatch, **form)
    got, calls = _update(w, g, False, monkeypatch, **form)
    assert calls and calls[-1] is not None
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


def test_multi_sgd_update_takes_the_native_step(monkeypatch):
    shapes = [(5, 4), (4,), (300, 17)]
    ws = [_values(int(np.prod(s)), i).reshape(s) for i, s in enumerate(shapes)]
    gs = [_values(int(np.prod(s)), 10 + i).reshape(s) for i, s in enumerate(shapes)]
    results = []
    for numpy_only in (True, False):
        calls = []
        monkeypatch.setattr(optimizer_updates.native, "sgd_f32",
                            lambda *a, real=native.sgd_f32, c=calls, only=numpy_only: (c.append(a), False if only
                                                                                       else real(*a))[1])
        wa = [mx.nd.array(w) for w in ws]
        mx.nd.multi_sgd_update(*[x for p in zip(wa, [mx.nd.array(g) for g in gs]) for x in p], out=wa, num_weights=3,
                               lrs=(0.1, 0.2, 0.3), wds=(0.0, 1e-3, 0.0), rescale_grad=1 / 32)
        results.append([x.asnumpy() for x in wa])
        assert len(calls) == 3
    for a, b in zip(*results):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def test_out_apart_from_weight():
    w, g = _values(500, 3), _values(500, 4)
    out = np.empty_like(w)
    assert native.sgd_f32(w, g, out, 0.5, 1.0, -1.0, 1.0)
    np.testing.assert_array_equal(out, w - g * np.float32(0.5))


@pytest.mark.parametrize("case", ["float64", "shapes", "strided", "gradient_is_out", "overlap", "readonly"])
def test_arrays_that_do_not_fit_are_left_to_numpy(case):
    w, g = _values(64, 5), _values(64, 6)
    out = w
    if case == "float64":
        w, g, out = w.astype(np.float64), g.astype(np.float64), w.astype(np.float64)
    elif case == "shapes":
        g = g[:32]
    elif case == "strided":
        w, g, out = w[::2], g[::2], w[::2]
    elif case == "gradient_is_out":
        g = w
    elif case == "overlap":
        out = w[1:33]
        w, g = w[:32], g[:32]
    elif case == "readonly":
        out = w.copy()
        out.flags.writeable = False
    before = out.copy()
    assert native.sgd_f32(w, g, out, 0.5, 1.0, -1.0, 1.0) is False
    np.testing.assert_array_equal(out, before)  # nothing written


def test_clip_to_zero_keeps_numpy_code(monkeypatch):
    _, calls = _update(_values(10, 7), _values(10, 8), False, monkeypatch, lr=0.1, clip_gradient=0.0)
    assert calls == []  # numpy's minimum picks between -0 and +0 its own way: its code runs
