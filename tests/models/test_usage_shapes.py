"""Cached, cache-write and reasoning tokens from each provider's usage block, in the real
shapes their APIs return (recorded bodies; parsed by the same functions the adapters use)."""

from __future__ import annotations

from orchestra.models._chat_format import chat_response
from orchestra.models._stream import fold_chunks
from orchestra.models.base import Usage
from orchestra.models.usage import usage_from_anthropic, usage_from_openai

# an OpenAI chat completion with a cached prompt prefix (o-series: reasoning tokens too)
OPENAI = {
    "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion",
    "created": 1741570283, "model": "gpt-4.1-mini-2025-04-14",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok",
                                         "refusal": None, "annotations": []},
                 "logprobs": None, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
              "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
              "completion_tokens_details": {"reasoning_tokens": 192, "audio_tokens": 0,
                                            "accepted_prediction_tokens": 0,
                                            "rejected_prediction_tokens": 0}},
    "service_tier": "default", "system_fingerprint": "fp_6ec83003ad",
}

# llama.cpp's server (an older build): prompt-cache reuse only in `timings`
LLAMA_OLD = {
    "choices": [{"finish_reason": "stop", "index": 0,
                 "message": {"role": "assistant", "content": "ok"}}],
    "created": 1741570283, "model": "qwen2.5-coder-7b-instruct-q4_k_m.gguf",
    "object": "chat.completion", "id": "chatcmpl-xyz",
    "usage": {"completion_tokens": 12, "prompt_tokens": 1034, "total_tokens": 1046},
    "timings": {"prompt_n": 18, "prompt_ms": 210.4, "prompt_per_token_ms": 11.7,
                "prompt_per_second": 85.5, "predicted_n": 12, "predicted_ms": 640.2,
                "predicted_per_token_ms": 53.4, "predicted_per_second": 18.7, "cache_n": 1016},
}

# a newer llama.cpp build: the same reuse also in usage.prompt_tokens_details
LLAMA_NEW = {**LLAMA_OLD, "usage": {**LLAMA_OLD["usage"],  # type: ignore[dict-item]
                                    "prompt_tokens_details": {"cached_tokens": 1016}}}

# an Anthropic message that read 1800 prompt tokens from the cache and wrote 200
ANTHROPIC_USAGE = {"input_tokens": 50, "cache_creation_input_tokens": 200,
                   "cache_read_input_tokens": 1800, "output_tokens": 120,
                   "service_tier": "standard",
                   "cache_creation": {"ephemeral_5m_input_tokens": 200,
                                      "ephemeral_1h_input_tokens": 0}}


def test_openai_cached_and_reasoning_tokens() -> None:
    usage = chat_response(OPENAI, model="gpt-4.1-mini").usage
    assert usage == Usage(2006, 300, cached_input_tokens=1920, reasoning_tokens=192)


def test_llama_cpp_reuse_from_timings_and_from_usage_details() -> None:
    old = chat_response(LLAMA_OLD, model="gguf:q").usage
    new = chat_response(LLAMA_NEW, model="gguf:q").usage
    assert old == new == Usage(1034, 12, cached_input_tokens=1016)


def test_llama_cpp_timings_fill_a_missing_prompt_count() -> None:
    usage = usage_from_openai({"completion_tokens": 3},
                              timings={"prompt_n": 10, "cache_n": 90})
    assert (usage.input_tokens, usage.cached_input_tokens) == (100, 90)


def test_anthropic_input_is_all_three_counts() -> None:
    assert usage_from_anthropic(ANTHROPIC_USAGE) == Usage(
        2050, 120, cached_input_tokens=1800, cache_write_tokens=200)


def test_missing_or_malformed_counts_read_as_zero() -> None:
    assert usage_from_openai(None) == Usage()
    assert usage_from_openai({"prompt_tokens": "12", "completion_tokens": None,
                              "prompt_tokens_details": None}) == Usage()
    assert usage_from_anthropic({"input_tokens": True, "output_tokens": -3}) == Usage()
    # a server that reports more cached tokens than prompt tokens: capped at the prompt
    assert usage_from_openai({"prompt_tokens": 5, "prompt_tokens_details":
                              {"cached_tokens": 9}}).cached_input_tokens == 5


def test_a_streamed_answer_counts_the_usage_of_its_last_chunk() -> None:
    """llama.cpp's stream: the last chunk carries usage (include_usage) and timings."""
    chunks = [{"id": "c", "model": "q", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": "o"},
                            "finish_reason": None}]},
              {"id": "c", "model": "q", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {"content": "k"}, "finish_reason": "stop"}]},
              {"id": "c", "model": "q", "object": "chat.completion.chunk", "choices": [],
               "usage": LLAMA_OLD["usage"], "timings": LLAMA_OLD["timings"]}]
    response = chat_response(fold_chunks(chunks), model="q")
    assert response.text == "ok"
    assert response.usage == Usage(1034, 12, cached_input_tokens=1016)
