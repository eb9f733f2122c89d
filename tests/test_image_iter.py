"""mx.image.ImageIter / ImageDetIter over a .rec written with mx.recordio and over PNG image lists."""
import random

import numpy as np
import pytest
from PIL import Image

import ember as mx

N = 7  # images: batches of 3 leave a remainder of 1


def _pixels(k):
    """Image k: a solid colour that identifies it after any crop (value k * 30 in every channel)."""
    return np.full((12 + k, 16, 3), k * 30, dtype=np.uint8)


@pytest.fixture(scope="module")
def pngs(tmp_path_factory):
    root = tmp_path_factory.mktemp("pngs")
    names = []
    for k in range(N):
        Image.fromarray(_pixels(k)).save(root / f"im{k}.png")
        names.append(f"im{k}.png")
    return str(root), names


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    root = tmp_path_factory.mktemp("rec")
    idx, path = str(root / "d.idx"), str(root / "d.rec")
    writer = mx.recordio.MXIndexedRecordIO(idx, path, "w")
    for k in range(N):
        header = mx.recordio.IRHeader(0, float(k), k, 0)
        writer.write_idx(k, mx.recordio.pack_img(header, _pixels(k)[:, :, ::-1], img_fmt=".png"))
    writer.close()
    return idx, path


def _ids(batch):
    """Image ids in a batch from their pixel values."""
    return [int(round(v / 30)) for v in batch.data[0].asnumpy()[:, 0, 0, 0]]


def test_imglist_batches_labels_and_pad(pngs):
    root, names = pngs
    it = mx.image.ImageIter(3, (3, 8, 8), imglist=[[k * 10, n] for k, n in enumerate(names)], path_root=root)
    assert it.provide_data[0].shape == (3, 3, 8, 8) and it.provide_label[0][1] == (3,)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    assert [_ids(b) for b in batches] == [[0, 1, 2], [3, 4, 5], [6, 0, 1]]
    np.testing.assert_array_equal(batches[2].label[0].asnumpy(), [60, 0, 10])
    assert batches[0].data[0].dtype == np.float32
    it.reset()
    assert _ids(it.next()) == [0, 1, 2]


def test_lst_file_discard_and_roll_over(pngs, tmp_path):
    root, names = pngs
    lst = tmp_path / "list.lst"
    lst.write_text("".join(f"{k}\t{k}\t{k + 0.5}\t{n}\n" for k, n in enumerate(names)))
    it = mx.image.ImageIter(3, (3, 8, 8), label_width=2, path_imglist=str(lst), path_root=root,
                            last_batch_handle="discard", dtype="float64")
    batches = list(it)
    assert len(batches) == 2
    np.testing.assert_array_equal(batches[1].label[0].asnumpy(), [[3, 3.5], [4, 4.5], [5, 5.5]])
    it = mx.image.ImageIter(3, (3, 8, 8), label_width=2, path_imglist=str(lst), path_root=root,
                            last_batch_handle="roll_over")
    assert len(list(it)) == 2
    it.reset()
    first = it.next()
    assert first.pad == 2 and _ids(first) == [6, 0, 1]
    it.hard_reset()
    assert _ids(it.next()) == [0, 1, 2]


def test_rec_sequential_indexed_shuffle_and_parts(rec):
    idx, path = rec
    it = mx.image.ImageIter(4, (3, 8, 8), path_imgrec=path)
    batches = list(it)
    assert [_ids(b) for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 0]]
    np.testing.assert_array_equal(batches[0].label[0].asnumpy(), [0, 1, 2, 3])

    def shuffled(seed):
        random.seed(seed)  # ImageIter shuffles with Python's random, as MXNet's
        batch = mx.image.ImageIter(7, (3, 8, 8), path_imgrec=path, path_imgidx=idx, shuffle=True).next()
        np.testing.assert_array_equal(batch.label[0].asnumpy(), _ids(batch))  # labels follow the images
        return _ids(batch)
    order = shuffled(4)
    assert sorted(order) == list(range(N)) and order != list(range(N))
    assert shuffled(4) == order
    part = mx.image.ImageIter(3, (3, 8, 8), path_imgrec=path, path_imgidx=idx, num_parts=2, part_index=1)
    batch = part.next()
    assert _ids(batch) == [3, 4, 5]
    np.testing.assert_array_equal(batch.label[0].asnumpy(), [3, 4, 5])


def test_augmenter_keywords_and_aug_list(pngs):
    root, names = pngs
    imglist = [[0, n] for n in names]
    random.seed(0)
    np.random.seed(0)
    it = mx.image.ImageIter(2, (3, 8, 8), imglist=imglist, path_root=root, resize=10, rand_crop=True,
                            rand_resize=True, rand_mirror=True, mean=True, std=True, brightness=0.1,
                            contrast=0.1, saturation=0.1, hue=0.1, pca_noise=0.1, rand_gray=0.2,
                            inter_method=10, shuffle=True)
    assert all(b.data[0].shape == (2, 3, 8, 8) for b in it)
    it = mx.image.ImageIter(2, (3, 4, 4), imglist=imglist, path_root=root,
                            aug_list=[mx.image.ForceResizeAug((4, 4)), mx.image.CastAug()])
    assert it.next().data[0].shape == (2, 3, 4, 4)


def test_bad_arguments():
    with pytest.raises(AssertionError, match="path_imgrec"):
        mx.image.ImageIter(2, (3, 8, 8))
    with pytest.raises(AssertionError, match="label not supported"):
        mx.image.ImageIter(2, (3, 8, 8), imglist=[], dtype="uint8")
    with pytest.raises(ValueError, match="3 channels"):
        mx.image.ImageIter(2, (1, 8, 8), imglist=[])
    with pytest.raises(ValueError, match="length 3"):
        mx.image.ImageIter(2, (8, 8), imglist=[])
    with pytest.raises(ValueError, match="last_batch_handle"):
        mx.image.ImageIter(2, (3, 8, 8), imglist=[], last_batch_handle="keep")


def test_broken_image_names_the_file(tmp_path):
    (tmp_path / "bad.png").write_bytes(b"not a png")
    it = mx.image.ImageIter(1, (3, 8, 8), imglist=[[0, "bad.png"]], path_root=str(tmp_path))
    with pytest.raises(RuntimeError, match="bad.png"):
        it.next()


def _det_label(boxes):
    return [2, 5] + [v for cid, *box in boxes for v in [cid] + box]


def test_image_det_iter_labels_and_sync(pngs):
    root, names = pngs
    boxes = [[[1, 0.1, 0.1, 0.5, 0.6]], [[2, 0.2, 0.2, 0.9, 0.9], [3, 0.0, 0.0, 0.3, 0.3]]]
    imglist = [_det_label(boxes[k % 2]) + [n] for k, n in enumerate(names)]
    it = mx.image.ImageDetIter(2, (3, 10, 10), imglist=imglist, path_root=root)
    assert it.label_shape == (2, 5) and it.provide_label[0][1] == (2, 2, 5)
    batch = it.next()
    label = batch.label[0].asnumpy()
    np.testing.assert_allclose(label[0], [[1, 0.1, 0.1, 0.5, 0.6], [-1] * 5], rtol=1e-6)
    np.testing.assert_allclose(label[1], boxes[1], rtol=1e-6)
    assert batch.data[0].shape == (2, 3, 10, 10)
    small = mx.image.ImageDetIter(2, (3, 10, 10), imglist=imglist[:1], path_root=root)
    assert small.label_shape == (1, 5)
    assert it.sync_label_shape(small) is small and small.label_shape == (2, 5)
    with pytest.raises(ValueError, match="reduce label count"):
        it.reshape(label_shape=(1, 5))


def test_det_augmenters_move_boxes():
    label = np.array([[0, 0.1, 0.2, 0.4, 0.6]])
    src = mx.nd.array(np.zeros((10, 20, 3), dtype=np.float32))
    out, flipped = mx.image.DetHorizontalFlipAug(1.0)(src, label.copy())
    np.testing.assert_allclose(flipped, [[0, 0.6, 0.2, 0.9, 0.6]])
    random.seed(2)
    out, padded = mx.image.DetRandomPadAug(area_range=(2.0, 3.0), pad_val=(1, 2, 3))(src, label.copy())
    h, w = out.shape[:2]
    assert h >= 12 and w >= 22
    x0 = np.where(out.asnumpy()[:, :, 0] == 0)[1].min()
    np.testing.assert_allclose(padded[0, 1], (0.1 * 20 + x0) / w)
    random.seed(2)
    out, cropped = mx.image.DetRandomCropAug(min_object_covered=0.1, area_range=(0.3, 1.0))(src, label.copy())
    assert out.shape[0] <= 10 and cropped.shape[1] == 5 and (cropped[:, 1:] >= 0).all()
    augs = mx.image.CreateDetAugmenter((3, 8, 8), rand_crop=0.5, rand_pad=0.5, rand_mirror=True, mean=True)
    assert [type(a).__name__ for a in augs] == ["DetRandomSelectAug", "DetHorizontalFlipAug", "DetRandomSelectAug",
                                                "DetBorrowAug", "DetBorrowAug", "DetBorrowAug"]
    with pytest.raises(TypeError, match="Augmenter"):
        mx.image.DetBorrowAug(lambda x: x)
