"""gluon.utils: batch splitting, global-norm clipping, file checks and downloads, hook handles."""
from __future__ import annotations

import builtins
import collections
import glob
import hashlib
import http.server
import os
import pickle
import threading
import warnings

import numpy as np
import pytest

import ember as mx
from ember.gluon import utils


# -- split_data / split_and_load ---------------------------------------------------------------
def test_split_data_even_slices_are_views_along_axis_0():
    data = mx.nd.array(np.arange(24, dtype=np.float32).reshape(6, 4))
    parts = utils.split_data(data, 3)
    assert [p.shape for p in parts] == [(2, 4)] * 3
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), data.asnumpy())
    parts[1][:] = -1  # MXNet slices axis 0 without copying
    assert (data.asnumpy()[2:4] == -1).all()


def test_split_data_uneven_gives_the_first_slices_one_more():
    data = mx.nd.array(np.arange(7, dtype=np.float32))
    parts = utils.split_data(data, 3, even_split=False)
    assert [p.asnumpy().tolist() for p in parts] == [[0, 1, 2], [3, 4], [5, 6]]
    # more slices than elements: the last ones are empty
    assert [p.shape for p in utils.split_data(data[:2], 3, even_split=False)] == [(1,), (1,), (0,)]


def test_split_data_along_another_axis():
    values = np.arange(30, dtype=np.float32).reshape(2, 5, 3)
    parts = utils.split_data(mx.nd.array(values), 2, batch_axis=1, even_split=False)
    np.testing.assert_array_equal(parts[0].asnumpy(), values[:, :3])
    np.testing.assert_array_equal(parts[1].asnumpy(), values[:, 3:])


def test_split_data_refuses_an_uneven_split_when_asked_for_even():
    with pytest.raises(ValueError, match=r"cannot be evenly split into 3 slices along axis 0.*even_split=False"):
        utils.split_data(mx.nd.zeros((7, 2)), 3)


def test_split_and_load_puts_one_slice_on_each_context():
    values = np.arange(12, dtype=np.float32).reshape(4, 3)
    ctxs = [mx.cpu(0), mx.cpu(1)]
    parts = utils.split_and_load(values, ctxs)  # a numpy batch is made an NDArray first
    assert [p.context for p in parts] == ctxs
    np.testing.assert_array_equal(parts[0].asnumpy(), values[:2])
    np.testing.assert_array_equal(parts[1].asnumpy(), values[2:])
    whole = utils.split_and_load(mx.nd.array(values), [mx.cpu(3)])
    assert len(whole) == 1 and whole[0].context == mx.cpu(3) and whole[0].shape == (4, 3)


# -- clip_global_norm -----------------------------------------------------------------------------
def _reference_clip(values, max_norm):
    norm = np.sqrt(sum(float((v.astype(np.float64) ** 2).sum()) for v in values))
    scale = min(max_norm / (norm + 1e-8), 1.0)
    return norm, [v * scale for v in values]


@pytest.mark.parametrize("max_norm", [0.5, 1000.0])
def test_clip_global_norm_matches_numpy_and_returns_the_norm(max_norm):
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,), (2, 2, 2)]]
    arrays = [mx.nd.array(v, ctx=mx.cpu(i % 2)) for i, v in enumerate(values)]
    norm = utils.clip_global_norm(arrays, max_norm)
    ref_norm, ref_values = _reference_clip(values, max_norm)
    assert isinstance(norm, np.float32)
    assert norm == pytest.approx(ref_norm, rel=1e-5)
    for arr, ref, ctx in zip(arrays, ref_values, [mx.cpu(0), mx.cpu(1), mx.cpu(0)]):
        assert arr.context == ctx  # scaled where it lives
        np.testing.assert_allclose(arr.asnumpy(), ref, rtol=1e-5)


def test_clip_global_norm_without_the_finite_check_returns_an_ndarray():
    arrays = [mx.nd.array([3.0, 4.0])]
    norm = utils.clip_global_norm(arrays, 1.0, check_isfinite=False)
    assert isinstance(norm, mx.nd.NDArray) and norm.shape == (1,)
    assert norm.asscalar() == pytest.approx(5.0)
    np.testing.assert_allclose(arrays[0].asnumpy(), [0.6, 0.8], rtol=1e-6)


def test_clip_global_norm_warns_about_nan():
    arrays = [mx.nd.array([np.nan, 1.0])]
    with pytest.warns(UserWarning, match="nan or inf is detected"):
        norm = utils.clip_global_norm(arrays, 1.0)
    assert np.isnan(norm)
    with warnings.catch_warnings():
        # no check, no warning of clip_global_norm's own (numpy may still say that inf * 0 is nan:
        # made an error, that would fail the in-place scaling op and be left for a later wait)
        warnings.simplefilter("error", UserWarning)
        inf = mx.nd.array([np.inf])
        norm = utils.clip_global_norm([inf], 1.0, check_isfinite=False)
        assert np.isinf(norm.asscalar()) and np.isnan(inf.asscalar())


def test_clip_global_norm_needs_arrays():
    with pytest.raises(AssertionError):
        utils.clip_global_norm([], 1.0)


# -- check_sha1 / download ---------------------------------------------------------------------------
CONTENT = b"ember gluon utils download test\n" * 1000
SHA1 = hashlib.sha1(CONTENT).hexdigest()


def test_check_sha1(tmp_path):
    f = tmp_path / "blob"
    f.write_bytes(CONTENT)
    assert utils.check_sha1(str(f), SHA1)
    assert not utils.check_sha1(str(f), hashlib.sha1(b"other").hexdigest())


class _Handler(http.server.BaseHTTPRequestHandler):
    hits = collections.Counter()

    def do_GET(self):  # noqa: N802 (http.server's name)
        type(self).hits[self.path] += 1
        if self.path.startswith("/missing"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(CONTENT)))
        self.end_headers()
        self.wfile.write(CONTENT)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    """A local HTTP server on 127.0.0.1 serving CONTENT (404 under /missing)."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.fixture(params=["requests", "urllib"])
def fetcher(request, monkeypatch):
    """Run a download test through `requests` (as MXNet) and through the urllib fallback."""
    if request.param == "requests":
        pytest.importorskip("requests")
    else:
        real_import = builtins.__import__

        def no_requests(name, *args, **kwargs):
            if name == "requests":
                raise ImportError("requests hidden by the test")
            return real_import(name, *args, **kwargs)
        monkeypatch.setattr(builtins, "__import__", no_requests)
    return request.param


def test_download_over_http_into_a_directory(server, fetcher, tmp_path, capsys):
    fname = utils.download(f"{server}/data/blob.bin", path=str(tmp_path), sha1_hash=SHA1)
    assert fname == str(tmp_path / "blob.bin")
    assert (tmp_path / "blob.bin").read_bytes() == CONTENT
    assert os.listdir(tmp_path) == ["blob.bin"]  # no temporary file left
    assert "Downloading" in capsys.readouterr().out


def test_download_keeps_a_good_file_and_replaces_a_bad_one(server, fetcher, tmp_path):
    target = tmp_path / "kept.bin"
    target.write_bytes(b"old")
    url = f"{server}/kept-{fetcher}.bin"
    utils.download(url, path=str(target))
    assert target.read_bytes() == b"old" and _Handler.hits[f"/kept-{fetcher}.bin"] == 0
    utils.download(url, path=str(target), sha1_hash=SHA1)  # hash differs: fetched again
    assert target.read_bytes() == CONTENT
    utils.download(url, path=str(target), sha1_hash=SHA1)  # hash matches: kept
    assert _Handler.hits[f"/kept-{fetcher}.bin"] == 1
    target.write_bytes(b"old")
    utils.download(url, path=str(target), overwrite=True)
    assert _Handler.hits[f"/kept-{fetcher}.bin"] == 2
    assert target.read_bytes() == CONTENT


def test_a_file_that_appeared_during_the_download_is_kept(server, tmp_path, monkeypatch):
    # another process finished the same file while this one downloaded: its copy is dropped
    target = tmp_path / "raced.bin"
    real_fetch = utils._fetch

    def fetch_while_another_process_writes(url, verify_ssl):
        target.write_bytes(b"theirs")
        return real_fetch(url, verify_ssl)
    monkeypatch.setattr(utils, "_fetch", fetch_while_another_process_writes)
    with pytest.warns(UserWarning, match="exists in file system so the downloaded file is deleted"):
        utils.download(f"{server}/raced.bin", path=str(target))
    assert target.read_bytes() == b"theirs" and os.listdir(tmp_path) == ["raced.bin"]


def test_download_to_the_url_name_in_the_current_directory(server, fetcher, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert utils.download(f"{server}/here.bin") == "here.bin"
    assert (tmp_path / "here.bin").read_bytes() == CONTENT
    with pytest.raises(AssertionError, match="file-name"):
        utils.download(f"{server}/dir/")


def test_download_retries_then_raises_on_a_failing_url(server, fetcher, tmp_path, capsys):
    path = f"/missing-{fetcher}.bin"
    with pytest.raises(RuntimeError, match="Failed downloading url"):
        utils.download(server + path, path=str(tmp_path / "x.bin"), retries=3)
    assert _Handler.hits[path] == 3  # `retries` attempts in all, as MXNet makes
    assert "retrying, 2 attempts left" in capsys.readouterr().out
    assert os.listdir(tmp_path) == []
    with pytest.raises(AssertionError, match="at least 0"):
        utils.download(server + path, path=str(tmp_path / "x.bin"), retries=-1)


def test_download_with_a_wrong_hash_fails(server, fetcher, tmp_path):
    with pytest.raises(UserWarning, match="content hash does not match"):
        utils.download(f"{server}/blob.bin", path=str(tmp_path / "b.bin"), sha1_hash="0" * 40, retries=1)


def test_download_of_a_file_url(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(CONTENT)
    dst = utils.download(src.as_uri(), path=str(tmp_path / "sub" / "dst.bin"), sha1_hash=SHA1)
    assert open(dst, "rb").read() == CONTENT  # the missing directory was made


def test_download_without_ssl_verification_warns(server, tmp_path):
    with pytest.warns(UserWarning, match="^Unverified HTTPS request"):
        utils.download(f"{server}/v.bin", path=str(tmp_path), verify_ssl=False)


def test_concurrent_downloads_of_one_file_leave_one_whole_file(server, tmp_path):
    target = str(tmp_path / "shared.bin")
    errors = []

    def fetch():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                utils.download(f"{server}/shared.bin", path=target, overwrite=True)
        except Exception as e:  # collected: an exception in a thread would be lost
            errors.append(e)
    threads = [threading.Thread(target=fetch) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert glob.glob(target + "*") == [target]
    assert open(target, "rb").read() == CONTENT


def test_repository_urls_follow_mxnet_gluon_repo(monkeypatch):
    monkeypatch.delenv("MXNET_GLUON_REPO", raising=False)
    assert utils._get_repo_file_url("gluon/models", "x.zip") == \
        "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/models/x.zip"
    monkeypatch.setenv("MXNET_GLUON_REPO", "http://127.0.0.1:8000/repo")  # a trailing '/' is added
    assert utils._get_repo_file_url("ns", "f.bin") == "http://127.0.0.1:8000/repo/ns/f.bin"


def test_replace_file_removes_the_source_when_it_cannot_move(tmp_path):
    src = tmp_path / "src"
    src.write_bytes(b"x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "inside").write_bytes(b"y")  # a non-empty directory cannot be replaced
    with pytest.raises(OSError, match="Please retry the download"):
        utils.replace_file(str(src), str(tmp_path / "dir"))
    assert not src.exists()


# -- small helpers ----------------------------------------------------------------------------------
def test_shape_is_known():
    assert utils.shape_is_known((2, 3))
    assert not utils.shape_is_known((2, 0))
    assert not utils.shape_is_known(None)
    assert not utils.shape_is_known(())
    with pytest.raises(AssertionError, match="cannot be less than 0"):
        utils.shape_is_known((2, -1))


def test_brief_print_list():
    assert utils._brief_print_list(["a", 1]) == "'a', '1'"
    assert utils._brief_print_list(range(10)) == "'0', '1', '2', ..., '6', '7', '8', '9'"
    assert utils._brief_print_list(range(10), limit=4) == "'0', '1', ..., '8', '9'"


def test_hook_handle_attaches_detaches_and_works_as_a_context_manager():
    hooks = collections.OrderedDict()

    def hook():
        pass
    handle = utils.HookHandle()
    handle.attach(hooks, hook)
    assert list(hooks.values()) == [hook]
    with pytest.raises(AssertionError, match="attached twice"):
        handle.attach(hooks, hook)
    handle.detach()
    assert not hooks
    handle.detach()  # detaching again does nothing
    with utils.HookHandle() as scoped:
        scoped.attach(hooks, hook)
        assert len(hooks) == 1
    assert not hooks


def test_hook_handle_pickles_with_its_dict():
    hooks = collections.OrderedDict()
    handle = utils.HookHandle()
    handle.attach(hooks, print)
    hooks2, handle2 = pickle.loads(pickle.dumps((hooks, handle)))
    assert list(hooks2) == [id(print)]
    handle2.detach()
    assert not hooks2 and len(hooks) == 1
    orphan = pickle.loads(pickle.dumps(handle))  # its dict was not pickled along: a dead reference
    orphan.detach()
