"""Gluon helpers (MXNet's `mx.gluon.utils`): splitting a batch over devices, clipping gradients
by their global norm, checking and downloading files, and the handle that detaches a block hook."""
from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
import uuid
import warnings
import weakref
from typing import Callable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import ndarray
from ..context import Context
from ..imperative.ndarray import NDArray
from ..util import is_np_array, is_np_shape

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download", "replace_file"]


# -- data parallelism ---------------------------------------------------------------------------
def split_data(data: NDArray, num_slice: int, batch_axis: int = 0, even_split: bool = True) -> List[NDArray]:
    """Split `data` into `num_slice` slices along `batch_axis` (always a list, even for one slice).

    With even_split, `num_slice` must divide the axis; otherwise the first `size % num_slice`
    slices get one element more.  Slices along axis 0 are views of `data`, as in MXNet.
    """
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            f"data with shape {data.shape} cannot be evenly split into {num_slice} slices along axis "
            f"{batch_axis}. Use a batch size that's multiple of {num_slice} or set even_split=False to "
            "allow uneven partitioning of data.")
    per_slice, extras = divmod(size, num_slice)
    sizes = [per_slice + 1] * extras + [per_slice] * (num_slice - extras)
    bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    if batch_axis == 0:
        return [data[bounds[i]:bounds[i + 1]] for i in range(num_slice)]
    slices = [ndarray.slice_axis(data, axis=batch_axis, begin=bounds[i], end=bounds[i + 1])
              for i in range(num_slice)]
    if type(data) is not NDArray and data.stype == "default":  # an mx.np.ndarray gives mx.np.ndarrays
        from ..numpy.multiarray import _as_np
        slices = _as_np(slices)
    return slices


def split_and_load(data, ctx_list: Sequence[Context], batch_axis: int = 0,
                   even_split: bool = True) -> List[NDArray]:
    """Split `data` (an NDArray or anything `nd.array` takes) into one slice per context in
    `ctx_list` along `batch_axis` and copy each slice to its context."""
    if not isinstance(data, NDArray):
        if is_np_array():
            from .. import numpy as mx_np
            data = mx_np.array(data, ctx=ctx_list[0])
        else:
            data = ndarray.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(ctx) for s, ctx in zip(slices, ctx_list)]


def clip_global_norm(arrays: Sequence[NDArray], max_norm: float,
                     check_isfinite: bool = True) -> Union[float, NDArray]:
    """Scale `arrays` in place so that the 2-norm of all their elements together is at most
    `max_norm`; return that norm before scaling.

    check_isfinite: read the norm back (a blocking wait), warn if it is nan or inf and return it
    as a float; otherwise return it as an NDArray of shape (1,) without waiting.
    """
    assert len(arrays) > 0, "clip_global_norm needs at least one array"
    ctx = arrays[0].context
    squares = []
    for arr in arrays:
        if arr.stype == "default":
            flat = arr.reshape((-1,))
            squares.append(ndarray.dot(flat, flat).as_in_context(ctx))
        else:  # sparse arrays do not reshape: their norm, as MXNet
            squares.append(ndarray.square(arr.norm()).as_in_context(ctx))
    total_norm = ndarray.sqrt(ndarray.add_n(*squares))
    if check_isfinite and not np.isfinite(total_norm.asscalar()):
        warnings.warn(UserWarning("nan or inf is detected. Clipping results will be undefined."),
                      stacklevel=2)
    # min(max_norm / norm, 1) computed on the device, so nothing waits unless check_isfinite
    scale = max_norm / (total_norm + 1e-8)
    scale = ndarray.min(ndarray.concat(scale, ndarray.ones(1, ctx=ctx), dim=0))
    for arr in arrays:
        arr *= scale.as_in_context(arr.context)
    return total_norm.asscalar() if check_isfinite else total_norm


# -- files ---------------------------------------------------------------------------------------
def check_sha1(filename: str, sha1_hash: str) -> bool:
    """Whether the SHA-1 of the file's content equals `sha1_hash` (hexadecimal)."""
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha1.update(block)
    return sha1.hexdigest() == sha1_hash


def replace_file(src: str, dst: str) -> None:
    """Move `src` over `dst` atomically (same file system); on failure remove `src` and raise OSError."""
    try:
        os.replace(src, dst)
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(src)
        raise OSError(f"Moving downloaded temp file - {src}, to {dst} failed. Please retry the download.")


def _fetch(url: str, verify_ssl: bool) -> Tuple[int, Iterator[bytes], Callable[[], None]]:
    """(status code, iterator of content chunks, close) for `url`.

    http(s) goes through `requests` when it is installed (as in MXNet, so proxies and session
    settings apply the same way); file:// URLs, and http(s) without `requests`, through urllib.
    """
    scheme = urllib.parse.urlparse(url).scheme
    if scheme in ("http", "https"):
        try:
            import requests
        except ImportError:
            requests = None
        if requests is not None:
            response = requests.get(url, stream=True, verify=verify_ssl)
            return response.status_code, response.iter_content(chunk_size=1024), response.close
    context = ssl._create_unverified_context() if (scheme == "https" and not verify_ssl) else None
    try:
        response = urllib.request.urlopen(url, context=context)
    except urllib.error.HTTPError as e:
        e.close()
        return e.code, iter(()), lambda: None
    status = getattr(response, "status", None) or 200  # file:// responses have no status
    return status, iter(lambda: response.read(1 << 16), b""), response.close


def download(url: str, path: Optional[str] = None, overwrite: bool = False, sha1_hash: Optional[str] = None,
             retries: int = 5, verify_ssl: bool = True) -> str:
    """Download `url` to `path` (a file, a directory, or by default the URL's file name in the
    current directory) and return the file's path.

    An existing file is kept unless `overwrite` or its SHA-1 differs from `sha1_hash`.  The data
    goes to a temporary file renamed into place, so concurrent downloads of one file never leave
    a partial file.  Failures are retried; after `retries` attempts the last error is raised.
    """
    if path is None:
        fname = url.split("/")[-1]
        assert fname, "Can't construct file-name from this URL. Please set the `path` option manually."
    else:
        path = os.path.expanduser(path)
        fname = os.path.join(path, url.split("/")[-1]) if os.path.isdir(path) else path
    assert retries >= 0, f"Number of retries should be at least 0, currently it's {retries}"
    if not verify_ssl:
        warnings.warn("Unverified HTTPS request is being made (verify_ssl=False). "
                      "Adding certificate verification is strongly advised.")
    if not (overwrite or not os.path.exists(fname) or (sha1_hash and not check_sha1(fname, sha1_hash))):
        return fname
    os.makedirs(os.path.dirname(os.path.abspath(os.path.expanduser(fname))), exist_ok=True)
    while True:
        try:
            print(f"Downloading {fname} from {url}...")
            _download_once(url, fname, sha1_hash, verify_ssl, overwrite)
            return fname
        except Exception as e:  # any failure (network, HTTP status, hash) is retried, as in MXNet
            retries -= 1
            if retries <= 0:
                raise e
            print(f"download failed due to {e!r}, retrying, {retries} attempt{'s' if retries > 1 else ''} left")


def _download_once(url: str, fname: str, sha1_hash: Optional[str], verify_ssl: bool, overwrite: bool) -> None:
    status, chunks, close = _fetch(url, verify_ssl)
    temp = f"{fname}.{uuid.uuid4()}"
    try:
        if status != 200:
            raise RuntimeError(f"Failed downloading url {url}")
        with open(temp, "wb") as f:
            for chunk in chunks:
                if chunk:  # skip keep-alive chunks
                    f.write(chunk)
    except BaseException:
        if os.path.exists(temp):
            os.remove(temp)
        raise
    finally:
        close()
    # Another process may have finished the same file meanwhile: keep a good one and drop ours
    # (MXNet drops ours even under `overwrite`, so overwrite=True never replaced a file there).
    if overwrite or not os.path.exists(fname) or (sha1_hash and not check_sha1(fname, sha1_hash)):
        replace_file(temp, fname)
    else:
        with contextlib.suppress(OSError):
            os.remove(temp)
        warnings.warn(f"File {fname} exists in file system so the downloaded file is deleted")
    if sha1_hash and not check_sha1(fname, sha1_hash):
        raise UserWarning(f"File {fname} is downloaded but the content hash does not match. The repo may be "
                          "outdated or download may be incomplete. If the \"repo_url\" is overridden, consider "
                          "switching to the default repo.")


def _get_repo_url() -> str:
    """The base URL of the Gluon dataset and model repository ($MXNET_GLUON_REPO overrides it)."""
    repo_url = os.environ.get("MXNET_GLUON_REPO", "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/")
    return repo_url if repo_url.endswith("/") else repo_url + "/"


def _get_repo_file_url(namespace: str, filename: str) -> str:
    """The URL of `filename` under `namespace` in the Gluon repository."""
    return f"{_get_repo_url()}{namespace}/{filename}"


# -- printing --------------------------------------------------------------------------------------
def _indent(text: str, num_spaces: int) -> str:
    """Indent every line of `text` but the first by `num_spaces` (for nested block reprs)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return "\n".join([lines[0]] + [" " * num_spaces + line for line in lines[1:]])


def _brief_print_list(lst, limit: int = 7) -> str:
    """The items quoted and comma-separated; more than `limit` items are elided in the middle."""
    lst = list(lst)
    if len(lst) > limit:
        return _brief_print_list(lst[:limit // 2], limit) + ", ..., " + _brief_print_list(lst[-limit // 2:], limit)
    return ", ".join(f"'{item}'" for item in lst)


# -- shapes --------------------------------------------------------------------------------------
def shape_is_known(shape) -> bool:
    """Whether every dimension of `shape` is known: 0 marks an unknown one in MXNet's legacy shape
    semantics (where an empty shape is unknown too), -1 under NumPy shape semantics (as MXNet)."""
    if shape is None:
        return False
    unknown = -1 if is_np_shape() else 0
    if len(shape) == 0:
        return unknown == -1
    for dim in shape:
        if dim == unknown:
            return False
        assert dim > unknown, f"shape dimension size cannot be less than {unknown}, while received {dim}"
    return True


# -- hooks ---------------------------------------------------------------------------------------
class HookHandle:
    """Detaches a hook from the dict it was registered in (returned by Block.register_*_hook);
    as a context manager it detaches the hook on exit."""

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict: dict, hook: Callable) -> None:
        """Register `hook` in `hooks_dict` under its id (a handle attaches exactly one hook)."""
        assert not self._hooks_dict_ref, "The same handle cannot be attached twice."
        self._id = id(hook)
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self) -> None:
        """Remove the hook (nothing happens if it, or its dict, is already gone)."""
        hooks_dict = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks_dict is not None and self._id in hooks_dict:
            del hooks_dict[self._id]

    def __getstate__(self):
        return (self._hooks_dict_ref() if self._hooks_dict_ref is not None else None, self._id)

    def __setstate__(self, state):
        hooks_dict, self._id = state
        # a dict that did not survive pickling: refer to a fresh one that dies at once
        self._hooks_dict_ref = weakref.ref(hooks_dict if hooks_dict is not None else collections.OrderedDict())

    def __enter__(self) -> "HookHandle":
        return self

    def __exit__(self, ptype, value, trace) -> None:
        self.detach()
