"""`mx.contrib.text.embedding`: token embeddings (MXNet 1.9.1's API).

`GloVe` and `FastText` read MXNet's pre-trained files from `embedding_root/<glove|fasttext>/` (ember never
downloads; see `_TokenEmbedding._get_pretrained_file`), `CustomEmbedding` reads any file of
``token<delim>v1<delim>v2...`` lines, and `CompositeEmbedding` concatenates embeddings for a vocabulary.
`register` / `create` / `get_pretrained_file_names` are the by-name registry of embedding classes."""
from __future__ import annotations

import os
import warnings
from typing import Callable, Dict, List, Optional, Union

from ... import ndarray as nd
from ...base import data_dir
from . import _pretrained_files
from ._base import _TokenEmbedding
from .vocab import Vocabulary, _check

__all__ = ["register", "create", "get_pretrained_file_names", "GloVe", "FastText", "CustomEmbedding",
           "CompositeEmbedding"]

# lower-cased class name -> registered embedding class
_REGISTRY: Dict[str, type] = {}


def register(embedding_cls: type) -> type:
    """Class decorator: make a `_TokenEmbedding` subclass creatable by its lower-cased class name.

    Registering a second class under a taken name replaces the first, with a warning (as MXNet does)."""
    _check(isinstance(embedding_cls, type) and issubclass(embedding_cls, _TokenEmbedding),
           f"Can only register subclasses of _TokenEmbedding, got {embedding_cls!r}.")
    name = embedding_cls.__name__.lower()
    if name in _REGISTRY:
        warnings.warn(f"New token embedding {embedding_cls.__module__}.{embedding_cls.__name__} registered "
                      f"with name {name} is overriding existing token embedding "
                      f"{_REGISTRY[name].__module__}.{_REGISTRY[name].__name__}", UserWarning, stacklevel=2)
    _REGISTRY[name] = embedding_cls
    return embedding_cls


def create(embedding_name: str, **kwargs) -> _TokenEmbedding:
    """An instance of the registered embedding `embedding_name` (case-insensitive), built with `kwargs`
    (e.g. ``create('glove', pretrained_file_name='glove.6B.50d.txt')``)."""
    _check(isinstance(embedding_name, str),
           f"token embedding name must be a string, got {type(embedding_name).__name__}")
    name = embedding_name.lower()
    _check(name in _REGISTRY, f"{name} is not registered. Please register with token embedding.register "
                              f"first (registered: {', '.join(sorted(_REGISTRY))}).")
    return _REGISTRY[name](**kwargs)


def get_pretrained_file_names(embedding_name: Optional[str] = None) -> Union[List[str], Dict[str, List[str]]]:
    """The pre-trained file names of one registered embedding, or, for None, a dict of every registered
    embedding's names. An unregistered `embedding_name` raises KeyError."""
    if embedding_name is None:
        return {name: list(cls.pretrained_file_name_sha1) for name, cls in _REGISTRY.items()}
    if embedding_name not in _REGISTRY:
        raise KeyError(f"Cannot find `embedding_name` {embedding_name}. Use "
                       f"`get_pretrained_file_names(embedding_name=None).keys()` to get all the valid embedding "
                       f"names.")
    return list(_REGISTRY[embedding_name].pretrained_file_name_sha1)


def _default_root() -> str:
    # MXNet's default, $MXNET_HOME/embeddings, so files MXNet downloaded earlier are found
    return os.path.join(data_dir(), "embeddings")


class _PretrainedEmbedding(_TokenEmbedding):
    """Shared constructor of the registered pre-trained embeddings (space-delimited files)."""

    def __init__(self, pretrained_file_name: str, embedding_root: Optional[str] = None,
                 init_unknown_vec: Callable = nd.zeros, vocabulary: Optional[Vocabulary] = None, **kwargs):
        type(self)._check_pretrained_file_names(pretrained_file_name)
        super().__init__(**kwargs)
        path = type(self)._get_pretrained_file(embedding_root or _default_root(), pretrained_file_name)
        self._load_embedding(path, " ", init_unknown_vec)
        self._build_embedding_for_vocabulary(vocabulary)


@register
class GloVe(_PretrainedEmbedding):
    """The GloVe word vectors (https://nlp.stanford.edu/projects/glove/), read from
    `embedding_root/glove/<pretrained_file_name>` (default root $MXNET_HOME/embeddings).

    `pretrained_file_name` is one of `get_pretrained_file_names('glove')`; `init_unknown_vec(shape=n)` gives
    the unknown token's vector; with `vocabulary`, that vocabulary's tokens are indexed."""

    pretrained_file_name_sha1 = _pretrained_files.GLOVE_FILES

    def __init__(self, pretrained_file_name: str = "glove.840B.300d.txt", embedding_root: Optional[str] = None,
                 init_unknown_vec: Callable = nd.zeros, vocabulary: Optional[Vocabulary] = None, **kwargs):
        super().__init__(pretrained_file_name, embedding_root, init_unknown_vec, vocabulary, **kwargs)


@register
class FastText(_PretrainedEmbedding):
    """The fastText word vectors (https://fasttext.cc/), read from
    `embedding_root/fasttext/<pretrained_file_name>` (default root $MXNET_HOME/embeddings).

    `pretrained_file_name` is one of `get_pretrained_file_names('fasttext')`; the header line of a .vec file
    is skipped. Other arguments as for `GloVe`."""

    pretrained_file_name_sha1 = _pretrained_files.FASTTEXT_FILES

    def __init__(self, pretrained_file_name: str = "wiki.simple.vec", embedding_root: Optional[str] = None,
                 init_unknown_vec: Callable = nd.zeros, vocabulary: Optional[Vocabulary] = None, **kwargs):
        super().__init__(pretrained_file_name, embedding_root, init_unknown_vec, vocabulary, **kwargs)


class CustomEmbedding(_TokenEmbedding):
    """An embedding read from your own file of ``token<elem_delim>v1<elem_delim>v2...`` lines.

    Every vector must have the same length (AssertionError otherwise); `encoding` is the file's text encoding;
    `unknown_token` / `reserved_tokens` go to `Vocabulary`. Other arguments as for `GloVe`."""

    def __init__(self, pretrained_file_path: str, elem_delim: str = " ", encoding: str = "utf8",
                 init_unknown_vec: Callable = nd.zeros, vocabulary: Optional[Vocabulary] = None, **kwargs):
        super().__init__(**kwargs)
        self._load_embedding(pretrained_file_path, elem_delim, init_unknown_vec, encoding)
        self._build_embedding_for_vocabulary(vocabulary)


class CompositeEmbedding(_TokenEmbedding):
    """The tokens of `vocabulary`, each with the vectors of `token_embeddings` (one embedding or a list)
    concatenated in list order; a token an embedding lacks gets that embedding's unknown vector."""

    def __init__(self, vocabulary: Vocabulary, token_embeddings: Union[_TokenEmbedding, List[_TokenEmbedding]]):
        # no Vocabulary.__init__: the indexing is taken from `vocabulary` below
        _check(isinstance(vocabulary, Vocabulary),
               f"`vocabulary` must be an mx.contrib.text.vocab.Vocabulary, got {type(vocabulary).__name__}.")
        embeds = token_embeddings if isinstance(token_embeddings, list) else [token_embeddings]
        for embed in embeds:
            _check(isinstance(embed, _TokenEmbedding),
                   f"`token_embeddings` must be a token embedding or a list of them, got {type(embed).__name__}.")
        self._index_tokens_from_vocabulary(vocabulary)
        self._set_idx_to_vec_by_embeddings(embeds, len(self), self.idx_to_token)
