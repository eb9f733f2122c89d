"""Where pretrained model-zoo weights live on disk (MXNet 1.9.1's `gluon.model_zoo.model_store`).

A model's weights file is `{root}/{name}-{first 8 hex digits of its SHA-1}.params`, the names and
hashes of the files MXNet publishes, so a directory MXNet filled (`~/.mxnet/models`) serves ember
unchanged.  ember does not reach the network on its own: a missing file is an error naming the path,
unless $MXNET_GLUON_REPO names a repository (a mirror, `file://` works too) to fetch it from.
"""
from __future__ import annotations

import errno
import hashlib
import logging
import os
import shutil
import tempfile
import uuid
import zipfile

from ...base import MissingFileError, data_dir
from ..utils import check_sha1, download, replace_file

__all__ = ["get_model_file", "purge"]

# SHA-1 of each published weights file (MXNet 1.9.1's table).
_model_sha1 = {
    "alexnet": "44335d1f0046b328243b32a26a4fbd62d9057b45",
    "densenet121": "f27dbf2dbd5ce9a80b102d89c7483342cd33cb31",
    "densenet161": "b6c8a95717e3e761bd88d145f4d0a214aaa515dc",
    "densenet169": "2603f878403c6aa5a71a124c4a3307143d6820e9",
    "densenet201": "1cdbc116bc3a1b65832b18cf53e1cb8e7da017eb",
    "inceptionv3": "ed47ec45a937b656fcc94dabde85495bbef5ba1f",
    "mobilenet0.25": "9f83e440996887baf91a6aff1cccc1c903a64274",
    "mobilenet0.5": "8e9d539cc66aa5efa71c4b6af983b936ab8701c3",
    "mobilenet0.75": "529b2c7f4934e6cb851155b22c96c9ab0a7c4dc2",
    "mobilenet1.0": "6b8c5106c730e8750bcd82ceb75220a3351157cd",
    "mobilenetv2_1.0": "36da4ff1867abccd32b29592d79fc753bca5a215",
    "mobilenetv2_0.75": "e2be7b72a79fe4a750d1dd415afedf01c3ea818d",
    "mobilenetv2_0.5": "aabd26cd335379fcb72ae6c8fac45a70eab11785",
    "mobilenetv2_0.25": "ae8f9392789b04822cbb1d98c27283fc5f8aa0a7",
    "resnet18_v1": "a0666292f0a30ff61f857b0b66efc0228eb6a54b",
    "resnet34_v1": "48216ba99a8b1005d75c0f3a0c422301a0473233",
    "resnet50_v1": "0aee57f96768c0a2d5b23a6ec91eb08dfb0a45ce",
    "resnet101_v1": "d988c13d6159779e907140a638c56f229634cb02",
    "resnet152_v1": "671c637a14387ab9e2654eafd0d493d86b1c8579",
    "resnet18_v2": "a81db45fd7b7a2d12ab97cd88ef0a5ac48b8f657",
    "resnet34_v2": "9d6b80bbc35169de6b6edecffdd6047c56fdd322",
    "resnet50_v2": "ecdde35339c1aadbec4f547857078e734a76fb49",
    "resnet101_v2": "18e93e4f48947e002547f50eabbcc9c83e516aa6",
    "resnet152_v2": "f2695542de38cf7e71ed58f02893d82bb409415e",
    "squeezenet1.0": "264ba4970a0cc87a4f15c96e25246a1307caf523",
    "squeezenet1.1": "33ba0f93753c83d86e1eb397f38a667eaf2e9376",
    "vgg11": "dd221b160977f36a53f464cb54648d227c707a05",
    "vgg11_bn": "ee79a8098a91fbe05b7a973fed2017a6117723a8",
    "vgg13": "6bc5de58a05a5e2e7f493e2d75a580d83efde38c",
    "vgg13_bn": "7d97a06c3c7a1aecc88b6e7385c2b373a249e95e",
    "vgg16": "e660d4569ccb679ec68f1fd3cce07a387252a90a",
    "vgg16_bn": "7f01cf050d357127a73826045c245041b0df7363",
    "vgg19": "ad2f660d101905472b83590b59708b71ea22b2e5",
    "vgg19_bn": "f360b758e856f1074a85abd5fd873ed1d98297c3",
}

_PUBLIC_REPO = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"


def short_hash(name: str) -> str:
    """The first 8 hex digits of the SHA-1 of `name`'s published weights (ValueError if there are none)."""
    if name not in _model_sha1:
        raise ValueError(f"Pretrained model for {name} is not available.")
    return _model_sha1[name][:8]


def _file_sha1(path: str) -> str:
    sha1 = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha1.update(block)
    return sha1.hexdigest()


def get_model_file(name: str, root: str = os.path.join(data_dir(), "models")) -> str:
    """The path of `name`'s pretrained weights under `root`: `{root}/{name}-{short_hash}.params`.

    The file must hold MXNet's published weights (its SHA-1 is checked).  When it is missing or
    differs, it is fetched from $MXNET_GLUON_REPO (`{repo}gluon/models/{file}.zip`, as MXNet
    does) if that is set; otherwise a MissingFileError (a FileNotFoundError) names the path for a
    missing file and a ValueError names it for a file with other content.
    """
    file_name = f"{name}-{short_hash(name)}"
    root = os.path.expanduser(root)
    file_path = os.path.join(root, file_name + ".params")
    sha1_hash = _model_sha1[name]
    repo_url = os.environ.get("MXNET_GLUON_REPO")
    if os.path.exists(file_path):
        if check_sha1(file_path, sha1_hash):
            return file_path
        if not repo_url:
            raise ValueError(
                f"The weights file {file_path} for model '{name}' is not MXNet's published file: its SHA-1 is "
                f"{_file_sha1(file_path)}, expected {sha1_hash}. Replace it with MXNet's file, or set "
                "MXNET_GLUON_REPO to a model repository to fetch it again.")
        logging.warning("Mismatch in the content of model file detected. Downloading again.")
    elif not repo_url:
        raise MissingFileError(
            errno.ENOENT,
            f"Pretrained weights for model '{name}' not found (ember does not download them unless "
            f"MXNET_GLUON_REPO names a model repository; MXNet's file is "
            f"{_PUBLIC_REPO}gluon/models/{file_name}.zip, unzipped into the root directory)", file_path)
    else:
        logging.info("Model file not found. Downloading to %s.", file_path)
    _fetch_from_repo(repo_url, file_name, root, file_path)
    if not check_sha1(file_path, sha1_hash):
        raise ValueError("Downloaded file has different hash. Please try again.")
    return file_path


def _fetch_from_repo(repo_url: str, file_name: str, root: str, file_path: str) -> None:
    """Download `{repo}gluon/models/{file_name}.zip` and move its `.params` into `file_path`.

    Every temporary name is unique, so processes fetching the same model at once never see a
    partial file: each replaces the destination atomically with a complete one."""
    os.makedirs(root, exist_ok=True)
    if not repo_url.endswith("/"):
        repo_url += "/"
    zip_path = os.path.join(root, f"{file_name}.zip{uuid.uuid4()}")
    download(f"{repo_url}gluon/models/{file_name}.zip", path=zip_path, overwrite=True)
    try:
        with zipfile.ZipFile(zip_path) as zf:
            temp_dir = tempfile.mkdtemp(dir=root)
            try:
                zf.extractall(temp_dir)
                replace_file(os.path.join(temp_dir, file_name + ".params"), file_path)
            finally:
                shutil.rmtree(temp_dir, ignore_errors=True)
    finally:
        os.remove(zip_path)


def purge(root: str = os.path.join(data_dir(), "models")) -> None:
    """Delete every `.params` file in `root` (the local model store)."""
    root = os.path.expanduser(root)
    for f in os.listdir(root):
        if f.endswith(".params"):
            os.remove(os.path.join(root, f))


def load_pretrained(net, name: str, ctx, root: str) -> None:
    """Load `name`'s pretrained weights from `root` into `net` on `ctx` (what every constructor's
    `pretrained=True` does)."""
    net.load_parameters(get_model_file(name, root=root), ctx=ctx)


def named_constructor(name: str, summary: str, getter, *args, net: str = "the network's class", **fixed):
    """The public model function `name(**kwargs)` = getter(*args, **kwargs) with the keywords `fixed`
    forced, documented by `summary` (it belongs to getter's module, as if written there)."""
    def build(**kwargs):
        return getter(*args, **dict(kwargs, **fixed))
    build.__name__ = build.__qualname__ = name
    build.__module__ = getter.__module__
    build.__doc__ = (f"{summary}\n\npretrained: load the weights from `root` (default $MXNET_HOME/models) onto "
                     f"`ctx` (default CPU); other keywords go to {net}.")
    return build
