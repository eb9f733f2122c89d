"""gluon.data: datasets, samplers, DataLoader (in-process, worker processes, threads), vision datasets."""
import glob
import gzip
import mmap
import multiprocessing
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember as mx
from ember.gluon import data as gdata
from ember.gluon.data import _shm


def _children():
    """PIDs of this process's live (non-zombie) child processes, from /proc."""
    me, kids = os.getpid(), []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = open(stat).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            kids.append(int(stat.split("/")[2]))
    return kids


def _shm_files():
    return glob.glob(os.path.join(_shm.SHM_DIR, f"ember-dataloader-{os.getpid()}-*"))


@pytest.fixture(autouse=True)
def no_leftovers():
    before = set(_children())
    yield
    deadline = time.time() + 5
    while set(_children()) - before and time.time() < deadline:
        time.sleep(0.05)
    assert not set(_children()) - before, "DataLoader worker processes left behind"
    assert not _shm_files(), "shared-memory files left behind"


# -- datasets -------------------------------------------------------------------------------------
def test_array_and_simple_dataset():
    x = np.arange(20).reshape(10, 2)
    y = mx.nd.arange(10)
    ds = gdata.ArrayDataset(x, y)
    assert len(ds) == 10
    a, b = ds[3]
    np.testing.assert_array_equal(a, [6, 7])
    assert isinstance(b, np.float32) and b == 3  # a 1-D NDArray is kept as numpy
    assert gdata.ArrayDataset(x)[2].tolist() == [4, 5]
    with pytest.raises(AssertionError, match="same length"):
        gdata.ArrayDataset(x, np.arange(3))
    s = gdata.SimpleDataset(list("abcde"))
    assert len(s) == 5 and s[4] == "e"


def test_transform_filter_shard_take():
    ds = gdata.ArrayDataset(np.arange(10), np.arange(10) * 10)
    t = ds.transform(lambda a, b: (a + 1, b))
    assert t[2] == (3, 20)
    assert ds.transform_first(lambda a: a * 2)[3] == (6, 30)
    calls = []
    eager = gdata.SimpleDataset(list(range(4))).transform(lambda v: calls.append(v) or v * 3, lazy=False)
    assert calls == [0, 1, 2, 3] and eager[1] == 3 and calls == [0, 1, 2, 3]
    f = gdata.SimpleDataset(list(range(10))).filter(lambda v: v % 3 == 0)
    assert [f[i] for i in range(len(f))] == [0, 3, 6, 9]
    # 10 samples in 3 shards: 4, 3, 3, contiguous
    shards = [gdata.SimpleDataset(list(range(10))).shard(3, i) for i in range(3)]
    assert [[s[i] for i in range(len(s))] for s in shards] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    with pytest.raises(AssertionError):
        gdata.SimpleDataset([1]).shard(2, 2)
    tk = gdata.SimpleDataset(list(range(10))).take(3)
    assert len(tk) == 3 and tk[2] == 2
    assert len(gdata.SimpleDataset([1, 2]).take(None)) == 2 and len(gdata.SimpleDataset([1, 2]).take(9)) == 2
    sm = gdata.SimpleDataset(list("abcd")).sample(gdata.IntervalSampler(4, 2))
    assert [sm[i] for i in range(4)] == list("acbd")
    with pytest.raises(TypeError, match="Invalid sampler"):
        gdata.SimpleDataset([1]).sample([0])


def test_record_file_dataset():
    fix = os.path.join(os.path.dirname(__file__), "..", "data", "recordio", "mxnet.rec")
    ds = gdata.RecordFileDataset(fix)
    expected = np.load(os.path.join(os.path.dirname(fix), "mxnet_expected.npz"))
    assert len(ds) == 15
    assert ds[11] == expected["key11"].tobytes()
    with pytest.raises(FileNotFoundError, match="missing.idx"):
        gdata.RecordFileDataset("/nonexistent/missing.rec")


# -- samplers -------------------------------------------------------------------------------------
def test_samplers():
    assert list(gdata.SequentialSampler(4, start=2)) == [2, 3, 4, 5]
    np.random.seed(0)
    r = list(gdata.RandomSampler(10))
    assert sorted(r) == list(range(10)) and r != list(range(10)) and len(gdata.RandomSampler(10)) == 10
    assert list(gdata.FilterSampler(lambda v: v > 1, [0, 5, 1, 3])) == [1, 3]
    seq = gdata.SequentialSampler(10)
    keep = gdata.BatchSampler(seq, 3, "keep")
    assert list(keep) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]] and len(keep) == 4
    disc = gdata.BatchSampler(seq, 3, "discard")
    assert list(disc) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and len(disc) == 3
    roll = gdata.BatchSampler(seq, 3, "rollover")
    assert list(roll) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(roll) == 3  # (1 carried + 10) // 3
    assert list(roll) == [[9, 0, 1], [2, 3, 4], [5, 6, 7]]
    assert list(roll)[0] == [8, 9, 0]
    with pytest.raises(ValueError, match="last_batch must be one of"):
        list(gdata.BatchSampler(seq, 3, "bogus"))
    with pytest.raises(ValueError, match="last_batch must be one of"):
        len(gdata.BatchSampler(seq, 3, "bogus"))
    assert list(gdata.IntervalSampler(13, 3)) == [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11]
    assert list(gdata.IntervalSampler(13, 3, rollover=False)) == [0, 3, 6, 9, 12]
    assert mx.gluon.contrib.data.IntervalSampler is gdata.IntervalSampler  # MXNet's contrib spelling


# -- DataLoader -----------------------------------------------------------------------------------
def _dataset(n=37):
    x = np.arange(n * 6, dtype=np.float32).reshape(n, 2, 3)
    return gdata.ArrayDataset(mx.nd.array(x), np.arange(n, dtype=np.int64)), x


def _check_epoch(loader, x, batch, n):
    seen = []
    for data, label in loader:
        assert isinstance(data, mx.nd.NDArray) and isinstance(label, mx.nd.NDArray)
        assert data.dtype == np.float32 and label.dtype == np.int64
        lab = label.asnumpy()
        np.testing.assert_array_equal(data.asnumpy(), x[lab])
        assert len(lab) <= batch
        seen.extend(lab.tolist())
    return seen


@pytest.mark.parametrize("workers,thread_pool", [(0, False), (1, False), (3, False), (2, True)])
def test_loader_order_and_values(workers, thread_pool):
    ds, x = _dataset()
    loader = gdata.DataLoader(ds, batch_size=5, num_workers=workers, thread_pool=thread_pool)
    assert len(loader) == 8
    for _ in range(2):  # two epochs
        assert _check_epoch(loader, x, 5, 37) == list(range(37))
    np.random.seed(1)
    shuffled = gdata.DataLoader(ds, batch_size=5, shuffle=True, last_batch="discard",
                                num_workers=workers, thread_pool=thread_pool)
    seen = _check_epoch(shuffled, x, 5, 37)
    assert len(seen) == 35 and len(set(seen)) == 35 and seen != sorted(seen)
    del loader, shuffled


def test_loader_arguments():
    ds, _ = _dataset(10)
    with pytest.raises(ValueError, match="batch_size must be specified"):
        gdata.DataLoader(ds)
    with pytest.raises(ValueError, match="shuffle must not be specified"):
        gdata.DataLoader(ds, batch_size=2, shuffle=True, sampler=gdata.SequentialSampler(10))
    with pytest.raises(ValueError, match="must not be specified if batch_sampler"):
        gdata.DataLoader(ds, batch_size=2, batch_sampler=gdata.BatchSampler(gdata.SequentialSampler(10), 2))
    with pytest.raises(AssertionError, match="timeout must be positive"):
        gdata.DataLoader(ds, batch_size=2, timeout=0)
    bs = gdata.BatchSampler(gdata.SequentialSampler(10), 4, "rollover")
    loader = gdata.DataLoader(ds, batch_sampler=bs)
    assert [l.asnumpy().tolist() for _, l in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [l.asnumpy().tolist() for _, l in loader][0] == [8, 9, 0, 1]
    # a custom sampler and batchify_fn, in workers too
    for workers in (0, 2):
        loader = gdata.DataLoader(gdata.SimpleDataset(list(range(6))), batch_size=4, num_workers=workers,
                                  sampler=gdata.SequentialSampler(6), batchify_fn=lambda b: ("batch", sum(b)))
        assert list(loader) == [("batch", 6), ("batch", 9)]
        del loader


def test_default_batchify_fn():
    f = gdata.dataloader.default_batchify_fn
    out = f([mx.nd.array([1, 2]), mx.nd.array([3, 4])])
    np.testing.assert_array_equal(out.asnumpy(), [[1, 2], [3, 4]])
    nested = f([(np.ones((2,), np.uint8), 1, (2.5, np.int32(3))), (np.zeros((2,), np.uint8), 0, (1.5, np.int32(4)))])
    assert isinstance(nested, list) and len(nested) == 3
    assert nested[0].dtype == np.uint8 and nested[0].shape == (2, 2)
    np.testing.assert_array_equal(nested[1].asnumpy(), [1, 0])
    assert isinstance(nested[2], list)
    np.testing.assert_array_equal(nested[2][0].asnumpy(), [2.5, 1.5])
    assert nested[2][1].dtype == np.int32


def _same_batch(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for p, q in zip(a, b):
            _same_batch(p, q)
    elif isinstance(a, mx.nd.NDArray):
        assert a.shape == b.shape and a.dtype == b.dtype and a.context == b.context
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    else:
        assert a == b


@pytest.mark.parametrize("kind", ["nd_label", "np_ndarray", "numpy", "scalars", "nested", "mixed_dtypes",
                                  "mixed_shapes", "strings", "bools"])
def test_default_batchify_in_workers_equals_in_process(kind):
    # workers stack the default batch straight into shared memory: it must be exactly what
    # default_batchify_fn makes in the loop's process, and fail the same way where that fails
    rs = np.random.RandomState(7)
    x = rs.randint(0, 255, (12, 4, 3, 2)).astype(np.uint8)
    samples = {
        "nd_label": [(mx.nd.array(x[i], dtype="uint8"), np.int32(i)) for i in range(12)],
        "np_ndarray": [mx.nd.array(x[i], dtype="float32").as_np_ndarray() for i in range(12)],
        "numpy": [x[i].astype(np.float64) for i in range(12)],
        "scalars": [(i, float(i) / 3) for i in range(12)],
        "nested": [(x[i], (np.float16(i), np.int64(-i))) for i in range(12)],
        "mixed_dtypes": [mx.nd.array(x[i], dtype="uint8" if i % 2 else "float32") for i in range(12)],
        "mixed_shapes": [x[i, : 1 + i % 2] for i in range(12)],
        "strings": [(x[i], f"s{i}") for i in range(12)],
        "bools": [(np.bool_(i % 2), x[i] > 100) for i in range(12)],
    }[kind]
    ds = gdata.SimpleDataset(samples)
    f = gdata.dataloader.default_batchify_fn
    try:
        in_place = gdata.dataloader._default_batch_in_place(samples[:5]) is not None
    except Exception:
        in_place = False
    assert in_place == (kind not in ("mixed_dtypes", "mixed_shapes", "strings"))
    try:
        want = [f(samples[i:i + 5]) for i in range(0, 12, 5)]
    except Exception as err:
        with pytest.raises(type(err)):
            list(gdata.DataLoader(ds, batch_size=5, num_workers=2))
        return
    got = list(gdata.DataLoader(ds, batch_size=5, num_workers=2))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        _same_batch(a, b)
    del got


def _root_buffer(a):
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a.obj if isinstance(a, memoryview) else a


def test_worker_batches_arrive_through_shared_memory():
    ds, x = _dataset(12)
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=2,
                              batchify_fn=lambda b: (gdata.dataloader.default_batchify_fn(b), np.ones(3), "tag"))
    batches = list(loader)
    (data, label), arr, tag = batches[1]
    # the arrays are views of a shared-memory mapping, not unpickled copies
    assert isinstance(_root_buffer(data._data), mmap.mmap)
    assert isinstance(_root_buffer(arr), mmap.mmap) and tag == "tag"
    np.testing.assert_array_equal(data.asnumpy(), x[4:8])
    data += 1  # writable: an ordinary NDArray
    np.testing.assert_array_equal(data.asnumpy(), x[4:8] + 1)
    del loader, batches, data, label, arr


def test_worker_files_are_reused_once_released_and_never_while_held():
    ds, x = _dataset(120)
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=2, prefetch=3)
    # dropping each batch: the workers write later batches into the same few files
    names, n = set(), 0
    for data, label in loader:
        names.update(_shm_files())
        np.testing.assert_array_equal(data.asnumpy(), x[label.asnumpy().astype(int)])
        n += 1
        del data, label
    assert n == 30 and 0 < len(names) <= 12, names
    # holding every batch: no file is written twice, every batch keeps its values
    held, names = [], set()
    for batch in loader:
        held.append(batch)
        names.update(_shm_files())
    assert len(names) >= 30
    for i, (data, label) in enumerate(held):
        np.testing.assert_array_equal(label.asnumpy(), np.arange(4 * i, 4 * i + 4))
        np.testing.assert_array_equal(data.asnumpy(), x[4 * i:4 * i + 4])
    del loader, held, batch, data, label


def test_worker_files_unit():
    prefix = os.path.join(_shm.SHM_DIR, f"ember-dataloader-{os.getpid()}-unit-")
    files = _shm.WorkerFiles(prefix)
    try:
        a, mm = files.take(100)
        b, _ = files.take(100)
        assert a != b and len(mm) == 100
        files.release([a])
        assert files.take(64)[0] == a  # a released file that fits is reused
        files.release([a, b])
        assert files.take(4096)[0] not in (a, b)  # too small: a new file
        files.release(["not-one-of-ours"])
        for _ in range(6):  # free files beyond the few kept are removed
            files.release([files.take(8192)[0]])
    finally:
        _shm.discard_prefix(prefix)


class _Failing(gdata.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise_from_worker_dataset(i)
        return np.float32(i)


def raise_from_worker_dataset(i):
    raise ValueError(f"bad sample {i}")


@pytest.mark.parametrize("thread_pool", [False, True])
def test_worker_exception_surfaces_with_traceback(thread_pool):
    loader = gdata.DataLoader(_Failing(), batch_size=2, num_workers=2, thread_pool=thread_pool)
    got = []
    with pytest.raises(ValueError, match="bad sample 5") as info:
        for b in loader:
            got.append(b.asnumpy().tolist())
    assert got == [[0, 1], [2, 3]]
    if not thread_pool:
        assert "raise_from_worker_dataset" in str(info.value.__cause__)
    del loader, info


class _Dying(gdata.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 4:
            os._exit(3)
        return np.float32(i)


def test_dead_worker_is_reported_not_hung():
    loader = gdata.DataLoader(_Dying(), batch_size=2, num_workers=2, timeout=60)
    start = time.time()
    with pytest.raises(RuntimeError, match="exited with code 3"):
        list(loader)
    assert time.time() - start < 30
    del loader


class _Slow(gdata.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(4 if i == 2 else 0)  # longer than the 1 s timeout
        return np.float32(i)


@pytest.mark.parametrize("thread_pool", [False, True])
def test_timeout(thread_pool):
    loader = gdata.DataLoader(_Slow(), batch_size=2, num_workers=1, timeout=1, thread_pool=thread_pool)
    with pytest.raises(multiprocessing.TimeoutError, match="timed out after 1 seconds"):
        list(loader)
    del loader


def test_no_process_left_after_early_stop_and_ctrl_c():
    ds, _ = _dataset(400)
    loader = gdata.DataLoader(ds, batch_size=2, num_workers=3, prefetch=8)
    for i, _ in enumerate(loader):
        assert len(_children()) == 3  # the workers run while the loop does
        if i == 2:
            break
    # the abandoned iteration ended its workers; the loader starts new ones for the next loop
    # (Python's own SIGINT handler, which raises KeyboardInterrupt: a runner started in the
    # background, `cmd &` in a non-interactive shell, inherits SIGINT ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            for i, _ in enumerate(loader):
                if i == 1:
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(1)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_no_process_left_at_interpreter_exit(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, os, sys
        import ember as mx
        from ember.gluon.data import DataLoader, ArrayDataset
        loader = DataLoader(ArrayDataset(np.zeros((100, 4), np.float32)), batch_size=2, num_workers=2)
        it = iter(loader)
        next(it)
        print(" ".join(str(p) for p in it.gi_frame.f_locals["it"]._pool.pids), flush=True)
        sys.exit(0)   # leaves the iteration (and its workers) open
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2
    time.sleep(0.5)
    for pid in pids:
        gone = not os.path.exists(f"/proc/{pid}")
        assert gone or open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


def test_auto_reload_prefetches_next_epoch():
    ds, x = _dataset(9)
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=1, auto_reload=True)
    assert len(_children()) == 1  # prefetching started at construction
    assert _check_epoch(loader, x, 4, 9) == list(range(9))
    assert _check_epoch(loader, x, 4, 9) == list(range(9))
    loader.clean()
    del loader


# -- vision datasets ----------------------------------------------------------------------------
def _write_mnist(root, stem, images, labels):
    os.makedirs(root, exist_ok=True)
    with gzip.open(os.path.join(root, f"{stem}-images-idx3-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, len(images), 28, 28) + images.tobytes())
    with gzip.open(os.path.join(root, f"{stem}-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">II", 2049, len(labels)) + labels.tobytes())


@pytest.mark.parametrize("cls", ["MNIST", "FashionMNIST"])
def test_mnist(tmp_path, cls):
    rs = np.random.RandomState(0)
    images = rs.randint(0, 256, (5, 28, 28)).astype(np.uint8)
    labels = np.array([3, 1, 4, 1, 5], np.uint8)
    _write_mnist(str(tmp_path), "t10k", images, labels)
    ds = getattr(gdata.vision, cls)(root=str(tmp_path), train=False)
    assert len(ds) == 5
    img, lab = ds[2]
    assert img.shape == (28, 28, 1) and img.dtype == np.uint8 and lab == 4 and lab.dtype == np.int32
    np.testing.assert_array_equal(img.asnumpy()[:, :, 0], images[2])
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte.gz"):
        getattr(gdata.vision, cls)(root=str(tmp_path), train=True)
    t = getattr(gdata.vision, cls)(root=str(tmp_path), train=False, transform=lambda d, l: (d.shape, l + 1))
    assert t[0] == ((28, 28, 1), 4)


def test_cifar(tmp_path):
    rs = np.random.RandomState(1)
    images = rs.randint(0, 256, (4, 3, 32, 32)).astype(np.uint8)
    folder = tmp_path / "c10" / "cifar-10-batches-bin"
    folder.mkdir(parents=True)
    recs = np.concatenate([np.array([[7], [2], [0], [9]], np.uint8), images.reshape(4, -1)], axis=1)
    (folder / "test_batch.bin").write_bytes(recs.tobytes())
    ds = gdata.vision.CIFAR10(root=str(tmp_path / "c10"), train=False)
    img, lab = ds[1]
    assert len(ds) == 4 and lab == 2 and img.shape == (32, 32, 3)
    np.testing.assert_array_equal(img.asnumpy(), images[1].transpose(1, 2, 0))
    with pytest.raises(FileNotFoundError, match="data_batch_1.bin"):
        gdata.vision.CIFAR10(root=str(tmp_path / "c10"), train=True)
    folder = tmp_path / "c100" / "cifar-100-binary"
    folder.mkdir(parents=True)
    recs = np.concatenate([np.array([[1, 11], [2, 22], [3, 33], [4, 44]], np.uint8), images.reshape(4, -1)], axis=1)
    (folder / "train.bin").write_bytes(recs.tobytes())
    coarse = gdata.vision.CIFAR100(root=str(tmp_path / "c100"))
    fine = gdata.vision.CIFAR100(root=str(tmp_path / "c100"), fine_label=True)
    assert coarse[2][1] == 3 and fine[2][1] == 33
    np.testing.assert_array_equal(fine[3][0].asnumpy(), images[3].transpose(1, 2, 0))


def test_image_folder_and_record_datasets(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    rs = np.random.RandomState(2)
    imgs = {}
    for cls in ("cat", "dog"):
        (tmp_path / "imgs" / cls).mkdir(parents=True)
        for k in range(2):
            arr = rs.randint(0, 256, (5, 7, 3)).astype(np.uint8)
            path = tmp_path / "imgs" / cls / f"{k}.png"
            Image.fromarray(arr).save(str(path))
            imgs[(cls, k)] = arr
    (tmp_path / "imgs" / "dog" / "notes.txt").write_text("x")
    with pytest.warns(UserWarning, match="Ignoring"):
        ds = gdata.vision.ImageFolderDataset(str(tmp_path / "imgs"))
    assert ds.synsets == ["cat", "dog"] and len(ds) == 4
    img, lab = ds[3]
    assert lab == 1 and img.shape == (5, 7, 3) and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy(), imgs[("dog", 1)])
    gray, _ = gdata.vision.ImageFolderDataset(str(tmp_path / "imgs"), flag=0)[0]
    assert gray.shape == (5, 7, 1)
    # a .rec of packed PNGs (pack_img takes OpenCV's BGR order, the dataset gives RGB)
    rec, idx = str(tmp_path / "i.rec"), str(tmp_path / "i.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i, key in enumerate(sorted(imgs)):
        w.write_idx(i, mx.recordio.pack_img((0, float(i), i, 0), imgs[key][:, :, ::-1], img_fmt=".png"))
    w.close()
    rds = gdata.vision.ImageRecordDataset(rec)
    img, lab = rds[2]
    assert lab == 2.0
    np.testing.assert_array_equal(img.asnumpy(), imgs[sorted(imgs)[2]])
    loader = gdata.DataLoader(rds.transform_first(gdata.vision.transforms.ToTensor()), batch_size=2, num_workers=2)
    batches = list(loader)
    assert batches[1][0].shape == (2, 3, 5, 7)
    np.testing.assert_allclose(batches[1][0].asnumpy()[1], imgs[sorted(imgs)[3]].transpose(2, 0, 1) / 255.0, rtol=1e-6)
    del loader, batches


def test_image_decoding_without_pillow(monkeypatch, tmp_path):
    import builtins
    real_import = builtins.__import__

    def no_pil(name, *args, **kwargs):
        if name == "PIL" or name.startswith("PIL."):
            raise ImportError("No module named 'PIL'")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_pil)
    with pytest.raises(ImportError, match="Pillow"):
        mx.recordio.decode_image(b"\x89PNG....")


@pytest.mark.parametrize("thread_pool", [False, True])
def test_two_passes_at_once(thread_pool):
    ds, x = _dataset(20)
    loader = gdata.DataLoader(ds, batch_size=3, num_workers=2, thread_pool=thread_pool)
    a, b = iter(loader), iter(loader)
    got_a, got_b = [], []
    for (da, la), (db, lb) in zip(a, b):  # interleaved passes keep their own order
        got_a += la.asnumpy().tolist()
        got_b += lb.asnumpy().tolist()
        np.testing.assert_array_equal(da.asnumpy(), x[la.asnumpy()])
    assert got_a == got_b == list(range(20))
    del a, b, loader
