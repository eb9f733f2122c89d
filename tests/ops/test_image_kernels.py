"""The image ops' native kernels (native/image_kernels.h): the same bits as the numpy code they
replace, and numpy's code wherever the arrays do not fit them."""
import numpy as np
import pytest

import ember as mx
from ember.engine import native
from ember.ops import image


class _Ctx:
    xp = np

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)


def _images(shape, dtype=np.uint8, seed=0):
    rs = np.random.RandomState(seed)
    if np.dtype(dtype).kind == "f":
        return rs.standard_normal(shape).astype(dtype)
    return rs.randint(0, 256, shape).astype(dtype)


@pytest.mark.parametrize("shape,axis", [((32, 32, 3), 1), ((5, 7, 1), 1), ((6, 9, 4), 0), ((2, 8, 5, 3), 2),
                                        ((3, 40, 6), 1), ((1, 1, 1), 0), ((4, 5), 1), ((4, 1, 3), 1), ((3, 2, 3), 1),
                                        ((4, 96, 96, 3), 2)])  # (past 64 KiB: run without the GIL)
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.float64, np.int16])
def test_reverse_axis_is_numpy_flip(shape, axis, dtype):
    x = _images(shape, dtype)
    out = np.full_like(x, 7)
    assert native.reverse_axis(x, out, axis)
    np.testing.assert_array_equal(out, np.flip(x, axis))


def test_reverse_axis_refuses_what_does_not_fit():
    x = _images((8, 6, 3))
    out = np.zeros_like(x)
    cases = [(x, x, 1),                               # in place: overlapping
             (x[:, ::2], out[:, :3], 1),              # not contiguous
             (x, out.astype(np.float32), 1),          # another format
             (x, out.reshape(6, 8, 3), 1),            # another shape
             (x, out, 3), (x, out, -1),               # no such axis
             (x[:0], out[:0], 0),                     # empty
             (x, out[:4].copy(), 0)]                  # fewer bytes
    for src, dst, axis in cases:
        before = dst.copy()
        assert native.reverse_axis(src, dst, axis) is False
        np.testing.assert_array_equal(dst, before)  # nothing written
    assert native.reverse_axis(x, np.zeros_like(x)[:, ::-1], 1) is False  # a reversed view


@pytest.mark.parametrize("shape", [(32, 32, 3), (7, 5, 1), (4, 6, 4), (3, 9, 2), (2, 8, 5, 3), (3, 4, 4, 1),
                                   (4, 96, 96, 3)])
def test_bytes_to_unit_chw_bit_for_bit(shape):
    x = _images(shape)
    axes = (2, 0, 1) if len(shape) == 3 else (0, 3, 1, 2)
    want = x.transpose(axes).astype(np.float32)
    np.divide(want, np.float32(255), out=want)
    out = np.empty(want.shape, np.float32)
    assert native.bytes_to_unit_chw(x, out)
    np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))


def test_bytes_to_unit_chw_every_byte_value():
    x = np.arange(256, dtype=np.uint8).reshape(16, 16, 1)
    out = np.empty((1, 16, 16), np.float32)
    assert native.bytes_to_unit_chw(x, out)
    want = np.arange(256, dtype=np.float32) / np.float32(255)
    np.testing.assert_array_equal(out.ravel().view(np.uint32), want.view(np.uint32))


def test_bytes_to_unit_chw_refuses_what_does_not_fit():
    x = _images((4, 6, 3))
    good = np.empty((3, 4, 6), np.float32)
    for src, dst in [(x.astype(np.float32), good), (x, good.astype(np.float64)), (x, np.empty((3, 6, 4), np.float32)),
                     (x, np.empty((4, 6, 3), np.float32)), (x[:, ::2], np.empty((3, 4, 3), np.float32)),
                     (x.reshape(2, 2, 6, 3), good), (x.reshape(72), good.reshape(72))]:
        assert native.bytes_to_unit_chw(src, dst) is False
    shared = np.zeros(3 * 4 * 6 * 5, np.uint8)  # the output's bytes overlapping the input's
    assert native.bytes_to_unit_chw(shared[:72].reshape(4, 6, 3), shared.view(np.float32)[:72].reshape(3, 4, 6)) \
        is False


def _normalized(x, mean, std):
    c = x.shape[-3]
    m = np.asarray(mean * (c // len(mean)), np.float64).astype(np.float32).reshape(c, 1, 1)
    s = np.asarray(std * (c // len(std)), np.float64).astype(np.float32).reshape(c, 1, 1)
    return (x - m) / s


@pytest.mark.parametrize("shape", [(3, 32, 32), (1, 5, 7), (4, 6, 9), (2, 3, 8, 5), (5, 4, 3, 3), (3, 1, 1)])
@pytest.mark.parametrize("mean,std", [((0.4914, 0.4822, 0.4465, 0.1), (0.247, 0.2435, 0.2616, 3.0)),
                                      ((0.5,), (0.2,)), ((-1.5,), (1e-3,))])
def test_normalize_f32_bit_for_bit(shape, mean, std):
    c = shape[-3]
    mean, std = (mean[:c], std[:c]) if len(mean) > 1 else (mean, std)
    x = _images(shape, np.float32)
    want = _normalized(x, mean, std)
    out = np.full_like(x, 7)
    assert native.normalize_f32(x, out, mean, std)
    np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))
    assert native.normalize_f32(x, x, mean, std)  # in place: the same values
    np.testing.assert_array_equal(x.view(np.uint32), want.view(np.uint32))


def test_normalize_f32_refuses_what_does_not_fit():
    x = _images((3, 4, 6), np.float32)
    m, s = (0.1, 0.2, 0.3), (0.5, 0.6, 0.7)
    cases = [(x.astype(np.float64), np.empty((3, 4, 6)), m, s),       # float64
             (x, np.empty((3, 6, 4), np.float32), m, s),               # another shape
             (x[:, ::2], np.empty((3, 2, 6), np.float32), m, s),       # not contiguous
             (x.reshape(72), np.empty(72, np.float32), m, s),          # not CHW
             (x[:0], np.empty((0, 4, 6), np.float32), m, s),           # empty
             (x, np.empty((3, 4, 6), np.float32), (0.1, 0.2), s),      # 2 values for 3 channels
             (x, np.empty((3, 4, 6), np.float32), [0.1, 0.2, 0.3], s),  # not a tuple
             (x, np.empty((3, 4, 6), np.float32), m, (0.5, "a", 0.7)),  # not a number
             (_images((5, 2, 2), np.float32), np.empty((5, 2, 2), np.float32), (0.1,), (0.5,))]  # 5 channels
    for src, dst, mean, std in cases:
        before = dst.copy()
        assert native.normalize_f32(src, dst, mean, std) is False
        np.testing.assert_array_equal(dst, before)  # nothing written
    shared = np.zeros(3 * 4 * 6 + 1, np.float32)  # overlapping, not the same elements
    assert native.normalize_f32(shared[1:].reshape(3, 4, 6), shared[:-1].reshape(3, 4, 6), m, s) is False


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_kernels_equal_numpy_with_or_without_the_native_path(dtype, monkeypatch):
    """The ops give the same values through the native kernels and through the numpy code that
    runs where they do not fit (here: forced by entry points that refuse everything)."""
    x = _images((10, 12, 3), dtype)
    flip = image._flip_kernel(2)
    outs = {}
    for native_on in (True, False):
        if not native_on:
            monkeypatch.setattr(native, "reverse_axis", lambda *args: False)
            monkeypatch.setattr(native, "bytes_to_unit_chw", lambda *args: False)
            monkeypatch.setattr(native, "normalize_f32", lambda *args: False)
        f = np.empty_like(x)
        flip(_Ctx(), {}, [x], [f], [])
        t = np.empty((3, 10, 12), np.float32)
        image._to_tensor(_Ctx(), {}, [x], [t], [])
        n = np.empty_like(t)
        image._normalize(_Ctx(), {"mean": (0.5, 0.4, 0.3), "std": (0.2, 0.25, 0.3)}, [t], [n], [])
        outs[native_on] = (f, t, n)
    np.testing.assert_array_equal(outs[True][0], np.flip(x, 1))
    np.testing.assert_array_equal(outs[True][0], outs[False][0])
    for i in (1, 2):
        np.testing.assert_array_equal(outs[True][i].view(np.uint32), outs[False][i].view(np.uint32))


def test_flips_on_views_and_in_place_keep_numpy_semantics():
    x = _images((6, 8, 3))
    out = np.empty((6, 4, 3), np.uint8)
    image._flip_kernel(2)(_Ctx(), {}, [x[:, ::2]], [out], [])  # a strided input
    np.testing.assert_array_equal(out, np.flip(x[:, ::2], 1))
    y = x.copy()
    image._flip_kernel(2)(_Ctx(), {}, [y], [y], [])  # in place
    np.testing.assert_array_equal(y, np.flip(x, 1))
    y = x.copy()
    image._flip_kernel(3)(_Ctx(), {}, [y], [y], [])  # top-bottom, in place
    np.testing.assert_array_equal(y, np.flip(x, 0))


def test_random_flip_draws_once_and_flips_or_copies():
    x = _images((5, 7, 3))
    kernel = image._random_flip_kernel("_image_random_flip_left_right", 2)
    ctx, ref = _Ctx(3), np.random.default_rng(3)
    for _ in range(20):
        out = np.empty_like(x)
        kernel(ctx, {}, [x], [out], [])
        want = np.flip(x, 1) if ref.random() < 0.5 else x
        np.testing.assert_array_equal(out, want)


def test_transforms_through_the_ops_hybridized_and_not():
    """ToTensor and the flips through mx.nd and a (hybridized) Compose, NHWC batches included."""
    T = mx.gluon.data.vision.transforms
    img = _images((9, 11, 3))
    want = img.transpose(2, 0, 1).astype(np.float32) / np.float32(255)
    x = mx.nd.array(img, dtype="uint8")
    np.testing.assert_array_equal(mx.nd.image.to_tensor(x).asnumpy(), want)
    batch = _images((2, 9, 11, 3))
    np.testing.assert_array_equal(mx.nd.image.to_tensor(mx.nd.array(batch, dtype="uint8")).asnumpy(),
                                  batch.transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255))
    np.testing.assert_array_equal(mx.nd.image.flip_left_right(x).asnumpy(), img[:, ::-1])
    np.testing.assert_array_equal(mx.nd.image.flip_top_bottom(x).asnumpy(), img[::-1])
    comp = T.Compose([T.ToTensor(), T.Normalize((0.5, 0.4, 0.3), (0.2, 0.25, 0.3))])  # hybridized within
    mean = np.float32([0.5, 0.4, 0.3]).reshape(3, 1, 1)
    std = np.float32([0.2, 0.25, 0.3]).reshape(3, 1, 1)
    for _ in range(3):  # the cached graph's later calls too
        np.testing.assert_array_equal(comp(x).asnumpy(), (want - mean) / std)
