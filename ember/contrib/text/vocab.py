"""`mx.contrib.text.vocab`: `Vocabulary`, a two-way map between tokens and integer indices."""
from __future__ import annotations

import collections
import numbers
from typing import Hashable, List, Optional, Sequence, Union

# The unknown token always has index 0 (MXNet's layout, which embeddings rely on for their first row).
UNKNOWN_IDX = 0


def _check(condition: bool, message: str) -> None:
    # MXNet reports a bad argument here with AssertionError; raise it explicitly so `python -O` keeps the check
    if not condition:
        raise AssertionError(message)


class Vocabulary:
    """Index text tokens: the unknown token first (index 0), then `reserved_tokens` in their order, then the keys
    of `counter` from most to least frequent (ties in ascending token order).

    `most_freq_count` caps how many counter keys are indexed (reserved tokens not counted; None: no cap) and
    `min_freq` is the least count a key needs. Keys that equal the unknown or a reserved token are not indexed
    twice. Tokens may be any hashable type, the same for the counter keys, `unknown_token` and
    `reserved_tokens`."""

    def __init__(self, counter: Optional[collections.Counter] = None, most_freq_count: Optional[int] = None,
                 min_freq: int = 1, unknown_token: Hashable = "<unk>",
                 reserved_tokens: Optional[Sequence[Hashable]] = None):
        _check(min_freq > 0, f"`min_freq` must be a positive number, got {min_freq}.")
        if reserved_tokens is not None:
            reserved_tokens = list(reserved_tokens)
            _check(unknown_token not in reserved_tokens,
                   f"`reserved_tokens` must not contain the unknown token {unknown_token!r}.")
            _check(len(set(reserved_tokens)) == len(reserved_tokens),
                   f"`reserved_tokens` must not contain duplicates, got {reserved_tokens}.")
        self._unknown_token = unknown_token
        self._reserved_tokens = reserved_tokens
        self._idx_to_token: List[Hashable] = [unknown_token] + (reserved_tokens or [])
        self._token_to_idx = {token: idx for idx, token in enumerate(self._idx_to_token)}
        if counter is not None:
            self._index_counter(counter, most_freq_count, min_freq)

    def _index_counter(self, counter: collections.Counter, most_freq_count: Optional[int],
                       min_freq: int) -> None:
        _check(isinstance(counter, collections.Counter),
               f"`counter` must be a collections.Counter, got {type(counter).__name__}.")
        # ascending token order first, then a stable sort by falling frequency: ties stay in token order
        by_freq = sorted(sorted(counter.items(), key=lambda kv: kv[0]), key=lambda kv: kv[1], reverse=True)
        limit = len(counter) if most_freq_count is None else most_freq_count
        added = 0
        for token, freq in by_freq:
            if freq < min_freq or added >= limit:
                break
            if token not in self._token_to_idx:
                self._append(token)
                added += 1

    def _append(self, token: Hashable) -> int:
        """Index a new token at the end and return its index."""
        self._idx_to_token.append(token)
        self._token_to_idx[token] = len(self._idx_to_token) - 1
        return self._token_to_idx[token]

    def __len__(self) -> int:
        return len(self._idx_to_token)

    @property
    def token_to_idx(self) -> dict:
        """dict: each indexed token's index."""
        return self._token_to_idx

    @property
    def idx_to_token(self) -> list:
        """list: the indexed tokens, position = index."""
        return self._idx_to_token

    @property
    def unknown_token(self) -> Hashable:
        """The token every unindexed token maps to (index 0)."""
        return self._unknown_token

    @property
    def reserved_tokens(self) -> Optional[list]:
        """The reserved tokens (indices 1..), or None."""
        return self._reserved_tokens

    def to_indices(self, tokens: Union[Hashable, list]) -> Union[int, List[int]]:
        """The index of a token, or the list of indices of a list of tokens; unknown tokens give 0."""
        if isinstance(tokens, list):
            return [self._token_to_idx.get(t, UNKNOWN_IDX) for t in tokens]
        return self._token_to_idx.get(tokens, UNKNOWN_IDX)

    def to_tokens(self, indices: Union[int, List[int]]) -> Union[Hashable, list]:
        """The token at an index, or the list of tokens at a list of indices.

        Raises ValueError for an index that is not an int in [0, len(self))."""
        single = not isinstance(indices, list)
        tokens = []
        for idx in [indices] if single else indices:
            if isinstance(idx, bool) or not isinstance(idx, numbers.Integral) or not 0 <= idx < len(self._idx_to_token):
                raise ValueError(f"Token index {idx!r} is invalid: indices are ints in "
                                 f"[0, {len(self._idx_to_token)}).")
            tokens.append(self._idx_to_token[idx])
        return tokens[0] if single else tokens
