"""Provider usage blocks as :class:`Usage`: what each API reports it billed.

One function per wire shape, on plain dicts, so every path that sees a usage block
(a whole response, the last chunk of a stream, a recorded session) reads it alike:

* OpenAI chat completions: ``prompt_tokens`` (cached ones included),
  ``prompt_tokens_details.cached_tokens``, ``completion_tokens_details.reasoning_tokens``.
* llama.cpp's server speaks the same shape; older builds report prompt-cache reuse only
  in ``timings`` (``cache_n`` tokens reused, ``prompt_n`` evaluated afresh), newer ones
  fill ``prompt_tokens_details.cached_tokens`` too.
* Anthropic messages: ``input_tokens`` counts only the uncached prompt;
  ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` come beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestra.models.base import Usage

__all__ = ["usage_from_anthropic", "usage_from_openai"]


def _count(block: object, key: str) -> int:
    """A non-negative whole count at ``block[key]``; anything else (absent, null, text) is 0."""
    if not isinstance(block, Mapping):
        return 0
    value = block.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(int(value), 0)


def usage_from_openai(usage: Mapping[str, Any] | None, *,
                      timings: Mapping[str, Any] | None = None) -> Usage:
    """A chat-completions ``usage`` block (and llama.cpp's ``timings``, if given) as Usage."""
    usage = usage if isinstance(usage, Mapping) else {}
    prompt = _count(usage, "prompt_tokens")
    cached = _count(usage.get("prompt_tokens_details"), "cached_tokens")
    if not cached and isinstance(timings, Mapping):
        # llama.cpp: cache_n prompt tokens came from its KV cache, prompt_n were evaluated
        cached = _count(timings, "cache_n")
        prompt = max(prompt, cached + _count(timings, "prompt_n"))
    return Usage(prompt, _count(usage, "completion_tokens"),
                 cached_input_tokens=min(cached, prompt),
                 reasoning_tokens=_count(usage.get("completion_tokens_details"),
                                         "reasoning_tokens"))


def usage_from_anthropic(usage: Mapping[str, Any] | None) -> Usage:
    """An Anthropic messages ``usage`` block as Usage (input = all three input counts)."""
    usage = usage if isinstance(usage, Mapping) else {}
    read = _count(usage, "cache_read_input_tokens")
    write = _count(usage, "cache_creation_input_tokens")
    return Usage(_count(usage, "input_tokens") + read + write, _count(usage, "output_tokens"),
                 cached_input_tokens=read, cache_write_tokens=write)
