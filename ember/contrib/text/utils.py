"""`mx.contrib.text.utils`: count the tokens of a text."""
from __future__ import annotations

import collections
import re
from typing import Optional


def count_tokens_from_str(source_str: str, token_delim: str = " ", seq_delim: str = "\n",
                          to_lower: bool = False,
                          counter_to_update: Optional[collections.Counter] = None) -> collections.Counter:
    """Count the tokens of `source_str`, split at `token_delim` and `seq_delim`.

    Both delimiters are regular expressions (escape special characters, e.g. ``'\\*'``); empty pieces are
    dropped. With `to_lower` tokens are lower-cased first. The counts are added to `counter_to_update`, which
    is returned, or to a new `collections.Counter` when it is None."""
    pieces = re.split(f"{token_delim}|{seq_delim}", source_str)
    tokens = [t.lower() if to_lower else t for t in pieces if t]
    if counter_to_update is None:
        return collections.Counter(tokens)
    counter_to_update.update(tokens)
    return counter_to_update
