"""`_TokenEmbedding`: the base of every token embedding in `mx.contrib.text.embedding`.

An embedding is a `Vocabulary` plus `idx_to_vec`, one row per indexed token (row 0: the unknown token). Rows
come from a text file of ``token<delim>v1<delim>v2...`` lines, or from other embeddings looked up for the tokens
of a vocabulary."""
from __future__ import annotations

import logging
import os
import warnings
from typing import Callable, Dict, List, Optional, Sequence, Union

import numpy as _np

from ... import ndarray as nd
from ...util import is_np_array
from .vocab import UNKNOWN_IDX, Vocabulary, _check


def _to_array(data):
    """An NDArray, or an `mx.np` array when NumPy array semantics is on (as MXNet's embeddings return)."""
    if is_np_array():
        from ... import numpy as mx_np
        return mx_np.array(data, dtype="float32")
    return nd.array(data, dtype="float32")


def _as_numpy(arr) -> _np.ndarray:
    return arr.asnumpy() if hasattr(arr, "asnumpy") else _np.asarray(arr)


def _read_vectors(path: str, elem_delim: str, unknown_token, encoding: str):
    """Parse an embedding file into (tokens, rows, unknown_row).

    The first line for a token wins (later ones are skipped with a warning); a line with a single number after
    its token is taken for a header (fastText's "count dim") and skipped; the unknown token's line gives
    `unknown_row` instead of a new token."""
    tokens: List[str] = []
    rows: List[List[float]] = []
    seen = set()
    unknown_row = None
    with open(path, "r", encoding=encoding) as f:
        for line_num, line in enumerate(f, 1):
            elems = line.rstrip().split(elem_delim)
            _check(len(elems) > 1, f"Line {line_num} of the embedding file {path} has a token but no vector "
                                   f"elements (delimiter {elem_delim!r}).")
            token, values = elems[0], [float(v) for v in elems[1:]]
            if token == unknown_token and unknown_row is None:
                unknown_row = values
            elif token in seen or token == unknown_token:
                warnings.warn(f"Line {line_num} of the embedding file {path}: token {token!r} already has a "
                              f"vector; this duplicate is skipped.")
                continue
            elif len(values) == 1:
                warnings.warn(f"Line {line_num} of the embedding file {path}: token {token!r} with the "
                              f"1-element vector {values} looks like a header and is skipped.")
                continue
            else:
                _check(not rows or len(values) == len(rows[0]),
                       f"Line {line_num} of the embedding file {path}: token {token!r} has {len(values)} "
                       f"elements but earlier tokens have {len(rows[0]) if rows else 0}; all vectors must "
                       f"have the same length.")
                tokens.append(token)
                rows.append(values)
            seen.add(token)
    return tokens, rows, unknown_row


class _TokenEmbedding(Vocabulary):
    """Base class of token embeddings: a `Vocabulary` whose every index has a vector in `idx_to_vec`.

    Use `create(name, ...)` for a registered pre-trained embedding (GloVe, FastText), `CustomEmbedding` for your
    own file and `CompositeEmbedding` to concatenate embeddings. Row 0 of `idx_to_vec` is the unknown token's
    vector: the file's vector for `unknown_token` when the file has one, else `init_unknown_vec(shape=vec_len)`.
    With a `vocabulary`, the embedding indexes that vocabulary's tokens instead of the file's."""

    # pre-trained file name -> SHA-1 digest, set by each registered pre-trained embedding
    pretrained_file_name_sha1: Dict[str, str] = {}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._vec_len: Optional[int] = None
        self._idx_to_vec = None

    @property
    def vec_len(self) -> Optional[int]:
        """int: the length of each token's vector."""
        return self._vec_len

    @property
    def idx_to_vec(self):
        """NDArray of shape (len(self), vec_len): row i is the vector of `idx_to_token[i]`."""
        return self._idx_to_vec

    # ---- pre-trained files -------------------------------------------------------------------------------

    @classmethod
    def _check_pretrained_file_names(cls, pretrained_file_name: str) -> None:
        """Raise KeyError unless `pretrained_file_name` is one of this embedding's pre-trained files."""
        if pretrained_file_name not in cls.pretrained_file_name_sha1:
            name = cls.__name__.lower()
            raise KeyError(f"Cannot find pretrained file {pretrained_file_name} for token embedding {name}. "
                           f"Valid pretrained files for embedding {name}: "
                           f"{', '.join(cls.pretrained_file_name_sha1)}")

    @classmethod
    def _get_pretrained_file(cls, embedding_root: str, pretrained_file_name: str) -> str:
        """The path of a pre-trained file under `embedding_root/<class name lower-cased>/`.

        ember does not download: the file must already be there (fetched by hand, or left by MXNet in
        $MXNET_HOME/embeddings). A missing file raises FileNotFoundError naming the path looked for; a file
        whose SHA-1 differs from the expected one is used with a warning (it may be a newer export)."""
        from ...gluon.utils import check_sha1
        path = os.path.join(os.path.expanduser(embedding_root), cls.__name__.lower(), pretrained_file_name)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"Pre-trained embedding file {pretrained_file_name} not found at {path}. ember does not download "
                f"embeddings: download and extract it there yourself, or pass embedding_root=<directory holding "
                f"{cls.__name__.lower()}/{pretrained_file_name}>.")
        expected = cls.pretrained_file_name_sha1.get(pretrained_file_name)
        if expected is not None and not check_sha1(path, expected):
            warnings.warn(f"{path}: SHA-1 differs from MXNet's published {expected}; loading it anyway.")
        return path

    # ---- building idx_to_vec -----------------------------------------------------------------------------

    def _load_embedding(self, pretrained_file_path: str, elem_delim: str,
                        init_unknown_vec: Callable, encoding: str = "utf8") -> None:
        """Index the tokens of an embedding file and load their vectors (see `_read_vectors` for the rules)."""
        path = os.path.expanduser(pretrained_file_path)
        if not os.path.isfile(path):
            raise ValueError(f"`pretrained_file_path` must be a path to a pre-trained token embedding file; "
                             f"{path} is not a file.")
        logging.info("Loading pre-trained token embedding vectors from %s", path)
        tokens, rows, unknown_row = _read_vectors(path, elem_delim, self._unknown_token, encoding)
        vec_len = len(rows[0]) if rows else (len(unknown_row) if unknown_row is not None else None)
        _check(vec_len is not None, f"The embedding file {path} holds no token vectors.")
        _check(unknown_row is None or len(unknown_row) == vec_len,
               f"The embedding file {path}: the unknown token's vector has {len(unknown_row or [])} elements "
               f"but the others have {vec_len}.")
        # Rows already indexed (the unknown and reserved tokens) take the file's vector when it has one, else
        # the init_unknown_vec one; MXNet left no rows for reserved tokens, misaligning idx_to_vec.
        file_rows = dict(zip(tokens, rows))
        init_row = _as_numpy(init_unknown_vec(shape=vec_len)) if unknown_row is None else unknown_row
        matrix = [unknown_row if unknown_row is not None else init_row]
        matrix += [file_rows.get(t, init_row) for t in self._idx_to_token[1:]]
        for token, row in zip(tokens, rows):
            if token not in self._token_to_idx:
                self._append(token)
                matrix.append(row)
        self._vec_len = vec_len
        self._idx_to_vec = _to_array(_np.asarray(matrix, dtype=_np.float32).reshape(-1, vec_len))

    def _index_tokens_from_vocabulary(self, vocabulary: Vocabulary) -> None:
        """Take over the indexing (tokens, unknown and reserved tokens) of `vocabulary`, as copies."""
        self._token_to_idx = dict(vocabulary.token_to_idx)
        self._idx_to_token = list(vocabulary.idx_to_token)
        self._unknown_token = vocabulary.unknown_token
        reserved = vocabulary.reserved_tokens
        self._reserved_tokens = list(reserved) if reserved is not None else None

    def _set_idx_to_vec_by_embeddings(self, token_embeddings: Sequence["_TokenEmbedding"], vocab_len: int,
                                      vocab_idx_to_token: list) -> None:
        """Rows for the tokens of a vocabulary: each embedding's vectors for them, side by side.

        Row 0 (the vocabulary's unknown token) concatenates each embedding's own unknown vector; other tokens
        an embedding lacks get that embedding's unknown vector too."""
        parts = []
        for embed in token_embeddings:
            vecs = _as_numpy(embed.idx_to_vec)
            rows = [embed.token_to_idx.get(t, UNKNOWN_IDX) for t in vocab_idx_to_token[1:vocab_len]]
            parts.append(vecs[[UNKNOWN_IDX] + rows])
        self._vec_len = sum(embed.vec_len for embed in token_embeddings)
        self._idx_to_vec = _to_array(_np.concatenate(parts, axis=1))

    def _build_embedding_for_vocabulary(self, vocabulary: Optional[Vocabulary]) -> None:
        """Re-index this embedding by `vocabulary`, keeping the loaded vectors of its tokens."""
        if vocabulary is None:
            return
        _check(isinstance(vocabulary, Vocabulary),
               f"`vocabulary` must be an mx.contrib.text.vocab.Vocabulary, got {type(vocabulary).__name__}.")
        self._set_idx_to_vec_by_embeddings([self], len(vocabulary), vocabulary.idx_to_token)
        self._index_tokens_from_vocabulary(vocabulary)

    # ---- look-up and update ------------------------------------------------------------------------------

    def _lookup(self, token, lower_case_backup: bool) -> int:
        idx = self._token_to_idx.get(token)
        if idx is None and lower_case_backup and isinstance(token, str):
            idx = self._token_to_idx.get(token.lower())
        return UNKNOWN_IDX if idx is None else idx

    def get_vecs_by_tokens(self, tokens: Union[str, List[str]], lower_case_backup: bool = False):
        """The vector of a token (1-D, length `vec_len`) or of a list of tokens (2-D, one row each).

        Unknown tokens get the unknown vector. With `lower_case_backup`, a token not indexed as written is
        looked up lower-cased before falling back to the unknown vector."""
        single = not isinstance(tokens, list)
        indices = [self._lookup(t, lower_case_backup) for t in ([tokens] if single else tokens)]
        table = self._idx_to_vec
        # Embedding is the gather MXNet uses, so the result is an ordinary (recordable) operator output
        if is_np_array():
            from ... import numpy_extension as npx
            vecs = npx.embedding(_to_array(indices), table, table.shape[0], table.shape[1])
        else:
            vecs = nd.Embedding(nd.array(indices), table, input_dim=table.shape[0], output_dim=table.shape[1])
        return vecs[0] if single else vecs

    def update_token_vectors(self, tokens: Union[str, List[str]], new_vectors) -> None:
        """Replace the vectors of indexed tokens with the rows of `new_vectors` (an NDArray).

        For one token (a string or a 1-element list) `new_vectors` is 1-D or 2-D with one row; for several it
        is 2-D with one row per token. Each row has `vec_len` elements (AssertionError otherwise). A token that
        is not indexed raises ValueError: to change the unknown vector, name `unknown_token` itself."""
        _check(self._idx_to_vec is not None, "`idx_to_vec` has not been set: this embedding holds no vectors.")
        _check(hasattr(new_vectors, "shape") and hasattr(new_vectors, "asnumpy"),
               f"`new_vectors` must be an NDArray, got {type(new_vectors).__name__}.")
        token_list = tokens if isinstance(tokens, list) else [tokens]
        ndim = len(new_vectors.shape)
        if len(token_list) == 1:
            _check(ndim in (1, 2), f"`new_vectors` for one token must be 1-D or 2-D, got {ndim}-D.")
            if ndim == 1:
                new_vectors = new_vectors.reshape((1, -1))
        else:
            _check(ndim == 2, f"`new_vectors` for {len(token_list)} tokens must be 2-D, got {ndim}-D.")
        _check(tuple(new_vectors.shape) == (len(token_list), self._vec_len),
               f"`new_vectors` must have shape ({len(token_list)}, {self._vec_len}) (one row of vec_len "
               f"elements per token), got {tuple(new_vectors.shape)}.")
        indices = []
        for token in token_list:
            if token not in self._token_to_idx:
                raise ValueError(f"Token {token!r} is unknown. To update the unknown token's vector, name the "
                                 f"unknown token {self._idx_to_token[UNKNOWN_IDX]!r} in `tokens` explicitly; "
                                 f"this avoids unintended updates.")
            indices.append(self._token_to_idx[token])
        self._idx_to_vec[_to_array(indices)] = new_vectors
