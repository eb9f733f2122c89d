"""mx.image augmenters and CreateAugmenter against numpy formulas (MXNet 1.9.1 behaviour)."""
import json
import random

import numpy as np
import pytest

import ember as mx


def _img(h=20, w=30, seed=0):
    return np.random.RandomState(seed).uniform(0, 255, (h, w, 3)).astype(np.float32)


def _alpha(amount, seed):
    """The jitter factor an augmenter draws after random.seed(seed)."""
    random.seed(seed)
    return 1.0 + random.uniform(-amount, amount)


def test_color_normalize_aug_numpy_and_ndarray_stats():
    src = _img()
    mean, std = np.array([120.0, 110.0, 100.0]), np.array([50.0, 60.0, 70.0])
    out = mx.image.ColorNormalizeAug(mean=mx.nd.array(mean), std=std)(mx.nd.array(src))
    np.testing.assert_allclose(out.asnumpy(), (src - mean) / std, rtol=1e-5, atol=1e-4)


def test_brightness_contrast_saturation_formulas():
    src = _img()
    alpha = _alpha(0.3, 5)
    random.seed(5)
    out = mx.image.BrightnessJitterAug(0.3)(mx.nd.array(src)).asnumpy()
    np.testing.assert_allclose(out, src * alpha, rtol=1e-5)

    luma = np.array([0.299, 0.587, 0.114])
    random.seed(5)
    out = mx.image.ContrastJitterAug(0.3)(mx.nd.array(src)).asnumpy()
    gray = (src * luma).sum(axis=2).mean()
    np.testing.assert_allclose(out, src * alpha + (1 - alpha) * gray, rtol=1e-4, atol=1e-3)

    random.seed(5)
    out = mx.image.SaturationJitterAug(0.3)(mx.nd.array(src)).asnumpy()
    gray = (src * luma).sum(axis=2, keepdims=True)
    np.testing.assert_allclose(out, src * alpha + (1 - alpha) * gray, rtol=1e-4, atol=1e-3)


def test_hue_jitter_zero_is_identity_and_gray_keeps_channels():
    src = _img()
    out = mx.image.HueJitterAug(1e-12)(mx.nd.array(src)).asnumpy()
    np.testing.assert_allclose(out, src, rtol=1e-2, atol=0.5)  # YIQ matrices are 3-digit rounded
    out = mx.image.RandomGrayAug(1.0)(mx.nd.array(src)).asnumpy()
    gray = src @ np.array([0.21, 0.72, 0.07])
    np.testing.assert_allclose(out, np.repeat(gray[:, :, None], 3, axis=2), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(mx.image.RandomGrayAug(0.0)(mx.nd.array(src)).asnumpy(), src)


def test_lighting_uses_numpy_rng():
    src = _img()
    eigval, eigvec = np.array([55.46, 4.794, 1.148]), np.eye(3)
    np.random.seed(3)
    alpha = np.random.normal(0, 0.1, size=(3,))
    np.random.seed(3)
    out = mx.image.LightingAug(0.1, eigval, eigvec)(mx.nd.array(src)).asnumpy()
    np.testing.assert_allclose(out, src + (eigvec * alpha) @ eigval, rtol=1e-5, atol=1e-4)


def test_flip_cast_and_crops():
    src = _img()
    np.testing.assert_array_equal(mx.image.HorizontalFlipAug(1.0)(mx.nd.array(src)).asnumpy(), src[:, ::-1])
    np.testing.assert_array_equal(mx.image.HorizontalFlipAug(0.0)(mx.nd.array(src)).asnumpy(), src)
    assert mx.image.CastAug()(mx.nd.array(src, dtype=np.uint8)).dtype == np.float32
    out = mx.image.CenterCropAug((10, 8))(mx.nd.array(src)).asnumpy()
    np.testing.assert_array_equal(out, src[6:14, 10:20])
    random.seed(1)
    x0, y0 = random.randint(0, 20), random.randint(0, 12)
    random.seed(1)
    out = mx.image.RandomCropAug((10, 8))(mx.nd.array(src)).asnumpy()
    np.testing.assert_array_equal(out, src[y0:y0 + 8, x0:x0 + 10])
    assert mx.image.RandomSizedCropAug((12, 9), 0.3, (0.75, 1.33))(mx.nd.array(src)).shape == (9, 12, 3)
    assert mx.image.ResizeAug(10)(mx.nd.array(src)).shape == (10, 15, 3)
    assert mx.image.ForceResizeAug((7, 9))(mx.nd.array(src)).shape == (9, 7, 3)


def test_sequential_random_order_and_dumps():
    augs = [mx.image.BrightnessJitterAug(0.1), mx.image.CastAug()]
    seq = mx.image.SequentialAug(augs)
    assert seq.dumps() == ["sequentialaug", [a.dumps() for a in augs]]
    assert json.loads(mx.image.ColorNormalizeAug(np.array([1.0, 2.0, 3.0]), None).dumps()) == \
        ["colornormalizeaug", {"mean": [1.0, 2.0, 3.0], "std": None}]
    assert json.loads(mx.image.CastAug().dumps()) == ["castaug", {"type": "float32"}]
    jitter = mx.image.ColorJitterAug(0.1, 0, 0.2)
    assert [type(a).__name__ for a in jitter.ts] == ["BrightnessJitterAug", "SaturationJitterAug"]
    assert isinstance(jitter, mx.image.RandomOrderAug)
    assert jitter(mx.nd.array(_img())).shape == (20, 30, 3)
    with pytest.raises(NotImplementedError):
        mx.image.Augmenter()(mx.nd.array(_img()))


def test_create_augmenter_classes_and_order():
    names = lambda augs: [type(a).__name__ for a in augs]  # noqa: E731
    assert names(mx.image.CreateAugmenter((3, 8, 8))) == ["CenterCropAug", "CastAug"]
    augs = mx.image.CreateAugmenter((3, 8, 10), resize=12, rand_crop=True, rand_resize=True, rand_mirror=True,
                                    mean=True, std=True, brightness=0.1, hue=0.1, pca_noise=0.1, rand_gray=0.1)
    assert names(augs) == ["ResizeAug", "RandomSizedCropAug", "HorizontalFlipAug", "CastAug", "ColorJitterAug",
                           "HueJitterAug", "LightingAug", "RandomGrayAug", "ColorNormalizeAug"]
    assert augs[1].size == (10, 8)
    np.testing.assert_allclose(augs[-1].mean.asnumpy(), [123.68, 116.28, 103.53], rtol=1e-6)
    assert names(mx.image.CreateAugmenter((3, 8, 8), rand_crop=True))[0] == "RandomCropAug"
    with pytest.raises(AssertionError, match="rand_resize"):
        mx.image.CreateAugmenter((3, 8, 8), rand_resize=True)
    with pytest.raises(AssertionError, match="mean"):
        mx.image.CreateAugmenter((3, 8, 8), mean=[1, 2, 3])


def test_decode_errors_and_aliases(tmp_path):
    with pytest.raises(mx.base.MXNetError, match="0 bytes"):
        mx.image.imdecode(b"")
    with pytest.raises(mx.base.MXNetError, match="decode"):
        mx.image.imdecode(b"clearly not image content")
    with pytest.raises(mx.base.MXNetError, match="cannot find"):
        mx.img.image.imread(str(tmp_path / "missing.jpg"))
    assert mx.img is mx.image and mx.image.image.ImageIter is mx.image.ImageIter
    assert mx.image.det.ImageDetIter is mx.image.ImageDetIter


def test_copy_make_border_modes():
    src = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3)
    out = mx.image.copyMakeBorder(mx.nd.array(src), 1, 2, 1, 0, type=0, values=[7, 8, 9]).asnumpy()
    assert out.shape == (5, 4, 3)
    np.testing.assert_array_equal(out[0, 0], [7, 8, 9])
    np.testing.assert_array_equal(out[1:3, 1:], src)
    out = mx.image.copyMakeBorder(mx.nd.array(src), 1, 1, 1, 1, type=1).asnumpy()
    np.testing.assert_array_equal(out, np.pad(src, ((1, 1), (1, 1), (0, 0)), mode="edge"))
    with pytest.raises(mx.base.MXNetError, match="border type"):
        mx.image.copyMakeBorder(mx.nd.array(src), 1, 1, 1, 1, type=7)
