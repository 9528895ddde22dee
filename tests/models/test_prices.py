"""Prices from genai-prices' bundled table (no network), overrides, and unpriced models."""

from __future__ import annotations

import socket
from decimal import Decimal
from typing import Any

import genai_prices
import pytest
from structlog.testing import capture_logs

from orchestra._errors import UserError
from orchestra.models.base import ModelRequest, ModelResponse, Usage, runs_locally
from orchestra.models.openai import is_loopback
from orchestra.models.prices import GenaiPrices, Price, Pricer, Prices, parse_prices, price_ref
from orchestra.models.testing import FunctionModel, ScriptedModel

WELL_KNOWN = [("openai", "gpt-4o"), ("openai", "gpt-4.1-mini"),
              ("anthropic", "claude-3-5-haiku-latest"), ("anthropic", "claude-haiku-4-5")]


def table(provider: str, model: str) -> Any:
    """The package's own price record for a model (what the by-hand checks read)."""
    return genai_prices.calc_price(genai_prices.Usage(input_tokens=1, output_tokens=1), model,
                                   provider_id=provider).model_price


def by_hand(price: Any, usage: Usage) -> float:
    """Tokens times the table's per-million prices, as a person would add them up."""
    fresh = usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens
    total = (fresh * price.input_mtok + usage.output_tokens * price.output_mtok
             + usage.cached_input_tokens * (price.cache_read_mtok or price.input_mtok)
             + usage.cache_write_tokens * (getattr(price, "cache_write_mtok", None)
                                           or price.input_mtok))
    return float(total / Decimal(1_000_000))


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a network connection fails the test."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the price table tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize("provider,model", WELL_KNOWN)
def test_well_known_models_cost_what_the_bundled_table_says(offline: None, provider: str,
                                                            model: str) -> None:
    usage = Usage(12_000, 800, cached_input_tokens=4_000, reasoning_tokens=300)
    if provider == "anthropic":
        usage = Usage(12_000, 800, cached_input_tokens=4_000, cache_write_tokens=2_000)
    cost = GenaiPrices().cost(f"{provider}:{model}", usage)
    price = table(provider, model)
    assert price.input_mtok > 0 and price.output_mtok > price.input_mtok
    assert price.cache_read_mtok < price.input_mtok  # cached input is cheaper: it counts
    assert cost == pytest.approx(by_hand(price, usage), rel=1e-12)


def test_well_known_prices_are_the_published_ones(offline: None) -> None:
    book = GenaiPrices()
    # USD per million tokens as the providers publish them (and the table ships them)
    assert book.cost("openai:gpt-4o", Usage(1_000_000, 1_000_000)) == pytest.approx(2.5 + 10)
    assert book.cost("openai:gpt-4.1-mini",
                     Usage(1_000_000, 0, cached_input_tokens=1_000_000)) == pytest.approx(0.1)
    assert book.cost("anthropic:claude-3-5-haiku-latest",
                     Usage(1_000_000, 0, cache_write_tokens=1_000_000)) == pytest.approx(1.0)


@pytest.mark.parametrize("name", ["gguf:/models/q.gguf", "ollama:qwen2.5-coder",
                                  "openai-compatible:http://h:8080/v1#qwen", "demo",
                                  "openai:no-such-model-xyz"])
def test_local_and_unknown_models_have_no_price(name: str) -> None:
    assert GenaiPrices().cost(name, Usage(1000, 1000)) is None


def test_unpriced_model_costs_zero_and_says_so_once() -> None:
    pricer = Pricer(Prices(fallback=GenaiPrices()))
    with capture_logs() as logs:
        first = pricer.priced("gguf:/m/q.gguf", Usage(100, 10))
        pricer.priced("gguf:/m/q.gguf", Usage(200, 20))
    assert first.cost == 0.0
    said = [e for e in logs if "no price for gguf:/m/q.gguf" in e["event"]]
    assert len(said) == 1 and said[0]["log_level"] == "warning"
    assert pricer.unpriced == {"gguf:/m/q.gguf"}


def test_a_process_says_once_per_model_however_many_pricers_it_makes() -> None:
    """A worker makes a pricer per run it serves: it said "no price" once per run."""
    with capture_logs() as logs:
        for _ in range(3):
            Pricer(Prices(fallback=None)).priced("scripted:once-per-process", Usage(1, 1))
        other = Pricer(Prices(fallback=None))
        other.priced("scripted:another-model", Usage(1, 1))
    said = [e["model"] for e in logs if e["event"].startswith("no price for")]
    assert said == ["scripted:once-per-process", "scripted:another-model"]
    assert other.unpriced == {"scripted:another-model"}


def test_overrides_win_by_full_name_or_bare_model_id() -> None:
    book = Prices({"gpt-4.1-mini": Price(1.0, 2.0, 0.5),
                   "openai-compatible:http://h/v1#qwen": Price(0.1, 0.2)})
    usage = Usage(1_000_000, 1_000_000, cached_input_tokens=500_000)
    assert book.cost("openai:gpt-4.1-mini", usage) == pytest.approx(0.5 + 0.25 + 2.0)
    assert book.cost("openai-compatible:http://h/v1#qwen", usage) == pytest.approx(0.3)
    assert book.cost("openai:gpt-4o", usage) == GenaiPrices().cost("openai:gpt-4o", usage)


def test_price_flags_parse_and_bad_ones_say_how_to_write_them() -> None:
    assert parse_prices(["openai-compatible:http://h:8/v1#m=0.4/1.6/0.1"]) == {
        "openai-compatible:http://h:8/v1#m": Price(0.4, 1.6, 0.1)}
    assert parse_prices("a=1/2; b=3/4/1/5") == {"a": Price(1, 2), "b": Price(3, 4, 1, 5)}
    for bad in ("gpt-4o", "gpt-4o=1", "gpt-4o=a/b", "=1/2", "m=1/-2"):
        with pytest.raises(UserError, match="MODEL=IN/OUT"):
            parse_prices([bad])


def test_price_ref_names_only_the_providers_own_apis() -> None:
    assert price_ref("openai:gpt-4o") == ("openai", "gpt-4o")
    assert price_ref("anthropic:claude-3-5-haiku-latest") == ("anthropic",
                                                               "claude-3-5-haiku-latest")
    assert price_ref("openai-compatible:http://x/v1#gpt-4o") is None


def test_a_local_model_costs_nothing_without_a_warning() -> None:
    pricer = Pricer(Prices(fallback=None), local={"function"})
    with capture_logs() as logs:
        usage = pricer.priced("function", Usage(100, 10))
        pricer.priced("hosted:unknown", Usage(1, 1))
    assert usage.cost == 0.0
    assert [e["model"] for e in logs if e["event"].startswith("no price")] == [
        "hosted:unknown"]
    assert pricer.uncounted == {"function"} and pricer.unpriced == {"hosted:unknown"}


class _Wrapper:
    """A wrapper that says nothing itself (tracing, JSON tools, recording)."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.name = "wrapped"

    async def request(self, request: ModelRequest) -> ModelResponse:
        raise AssertionError("not called")


def test_test_doubles_replays_and_servers_on_this_host_run_locally() -> None:
    assert runs_locally(FunctionModel(lambda r: "x")) and runs_locally(ScriptedModel([]))
    assert runs_locally(_Wrapper(ScriptedModel([])))
    assert not runs_locally(_Wrapper(object())) and not runs_locally(object())
    assert is_loopback("http://127.0.0.1:8080/v1") and is_loopback("http://localhost:11434")
    assert not is_loopback("https://api.openai.com/v1")
    assert not is_loopback("https://api.together.xyz/v1")
