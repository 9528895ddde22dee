"""Token counting: a dependency-free estimate, exact counts when tiktoken works.

The estimate (about four characters per token, plus a small per-message
overhead) errs high for English and code, which is the safe side for budgets.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache

MESSAGE_OVERHEAD = 4


def estimate_tokens(text: str) -> int:
    """Roughly ``len/4``, rounded up; never 0 for non-empty text."""
    return (len(text) + 3) // 4


@lru_cache(maxsize=1)
def _tiktoken_counter() -> Callable[[str], int] | None:
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
    except Exception:  # not installed, or its encoding file cannot be fetched offline
        return None
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def count_tokens(text: str, *, exact: bool = True) -> int:
    """Count tokens: tiktoken's exact count when it is installed and its encoding loads,
    else the estimate. Set ``ORCHESTRA_EXACT_TOKENS=0`` to always estimate."""
    if exact and _EXACT:
        counter = _tiktoken_counter()
        if counter is not None:
            return counter(text)
    return estimate_tokens(text)


_EXACT = os.environ.get("ORCHESTRA_EXACT_TOKENS", "1") != "0"
