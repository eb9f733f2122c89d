"""Text data for RNN language models: `encode_sentences` and the bucketing `BucketSentenceIter`."""
from __future__ import annotations

import bisect
import logging
import random
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import ndarray
from ..io import DataBatch, DataDesc, DataIter


def encode_sentences(sentences: Sequence[Sequence[str]], vocab: Optional[Dict[str, int]] = None,
                     invalid_label: int = -1, invalid_key: str = "\n", start_label: int = 0,
                     unknown_token: Optional[str] = None) -> Tuple[List[List[int]], Dict[str, int]]:
    """Sentences (lists of tokens) as lists of integer ids, and the vocabulary used.

    Without `vocab` a new one is built ({invalid_key: invalid_label} plus each new token numbered
    from `start_label`, skipping `invalid_label`).  With a `vocab`, an unknown token is an error
    unless `unknown_token` is given: then an unknown token maps to it, and (as in MXNet 1.9.1)
    each such occurrence gives `unknown_token` the next free id.
    """
    idx = start_label
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    encoded = []
    for sentence in sentences:
        coded = []
        for word in sentence:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise AssertionError(f"Unknown token {word}")
                if idx == invalid_label:
                    idx += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = idx
                idx += 1
            coded.append(vocab[word])
        encoded.append(coded)
    return encoded, vocab


class BucketSentenceIter(DataIter):
    """Batches of encoded sentences grouped by length into buckets, for language models.

    Each sentence is padded with `invalid_label` to the smallest bucket that holds it (longer
    ones are discarded); the label at each step is the next token.  buckets: lengths (default:
    every length at least `batch_size` sentences have).  layout: 'NT' (batch, time) or 'TN'.
    Each batch's `bucket_key` is its bucket length; `default_bucket_key` is the largest.
    """

    def __init__(self, sentences, batch_size: int, buckets: Optional[List[int]] = None,
                 invalid_label: int = -1, data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32", layout: str = "NT"):
        super().__init__(batch_size)
        major_axis = layout.find("N")
        if major_axis not in (0, 1) or sorted(layout) != ["N", "T"]:
            raise ValueError(f"Invalid layout {layout}: Must by NT (batch major) or TN (time major)")
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [length for length, n in enumerate(counts) if n >= batch_size]
        buckets = sorted(buckets)
        if not buckets:
            raise ValueError("BucketSentenceIter: no bucket; give buckets= or at least batch_size "
                             "sentences of one length")
        per_bucket: List[list] = [[] for _ in buckets]
        used = [False] * len(buckets)
        ndiscard = 0
        for sentence in sentences:
            b = bisect.bisect_left(buckets, len(sentence))
            if b == len(buckets):
                ndiscard += 1
                continue
            used[b] = True
            row = np.full((buckets[b],), invalid_label, dtype=dtype)
            row[:len(sentence)] = sentence
            per_bucket[b].append(row)
        if ndiscard:
            logging.warning("discarded %d sentences longer than the largest bucket.", ndiscard)
        self.buckets = [length for length, u in zip(buckets, used) if u]
        self.data = [np.asarray(rows, dtype=dtype) for rows in per_bucket if rows]
        self.batch_size = batch_size
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.major_axis = major_axis
        self.layout = layout
        self.default_bucket_key = max(self.buckets) if self.buckets else max(buckets)
        shape = (batch_size, self.default_bucket_key) if major_axis == 0 else (self.default_bucket_key, batch_size)
        self.provide_data = [DataDesc(name=data_name, shape=shape, layout=layout)]
        self.provide_label = [DataDesc(name=label_name, shape=shape, layout=layout)]
        self.idx = [(i, j) for i, rows in enumerate(self.data)
                    for j in range(0, len(rows) - batch_size + 1, batch_size)]
        self.reset()  # sets curr_idx, nddata and ndlabel

    def reset(self) -> None:
        """Start a new epoch: batch order and each bucket's sentences are shuffled (Python's and
        numpy's global RNGs, as MXNet)."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for rows in self.data:
            np.random.shuffle(rows)
        self.nddata, self.ndlabel = [], []
        for rows in self.data:
            label = np.empty_like(rows)
            label[:, :-1] = rows[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(rows, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self) -> DataBatch:
        """The next batch; StopIteration at the end of the epoch."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(name=self.data_name, shape=data.shape, layout=self.layout)],
                         provide_label=[DataDesc(name=self.label_name, shape=label.shape, layout=self.layout)])
