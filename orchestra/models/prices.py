"""What a model call costs: a small seam over a maintained price table.

Prices come from ``genai-prices`` (per provider and model, with cached-input and
cache-write prices and price changes over time; its data ships with the package, so
no network is needed). A user overrides a price (a private deployment, a negotiated
rate) with :class:`Price` values keyed by model name, in Python
(``Coordinator(prices=Prices({...}))``, ``Pipeline(prices={...})``), by
``--price MODEL=IN/OUT[/CACHED[/WRITE]]`` or ``$ORCHESTRA_PRICES``.

A model with no known price (a local server, an unknown name) costs 0, never a guess;
:class:`Pricer` says so once per model.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Protocol

from orchestra._errors import UserError
from orchestra._log import get_logger
from orchestra.models.base import Usage

__all__ = ["GenaiPrices", "Price", "PriceBook", "Pricer", "Prices", "layered", "parse_prices",
           "price_ref"]

_log = get_logger("orchestra.models")

MTOK = 1_000_000

HOSTED = ("openai", "anthropic")
"""Spec prefixes whose model names genai-prices knows (the provider's own API)."""


@dataclass(frozen=True, slots=True)
class Price:
    """A price in USD per million tokens; cached input and cache writes default to input."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def cost(self, usage: Usage) -> float:
        cached = self.input if self.cached_input is None else self.cached_input
        write = self.input if self.cache_write is None else self.cache_write
        fresh = max(usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens, 0)
        return (fresh * self.input + usage.cached_input_tokens * cached
                + usage.cache_write_tokens * write + usage.output_tokens * self.output) / MTOK


class PriceBook(Protocol):
    """The seam: what a call of ``model`` (a model's name, e.g. ``openai:gpt-4.1-mini``)
    with ``usage`` costs in USD, or None when no price is known."""

    def cost(self, model: str, usage: Usage) -> float | None: ...


def price_ref(model: str) -> tuple[str, str] | None:
    """(provider, model id) of a hosted model's name; None for local or unknown ones."""
    provider, sep, rest = model.partition(":")
    return (provider, rest) if sep and provider in HOSTED and rest else None


@cache
def _genai_prices_installed() -> bool:
    return importlib.util.find_spec("genai_prices") is not None


class GenaiPrices:
    """``genai-prices``' table (bundled data; never updated over the network here).

    Imported at the first hosted model it prices: with its HTTP client it is ~65 ms of
    every process's start-up (a quarter of a worker's imports), and local models, test
    doubles and every CLI command that prices nothing never need it."""

    def __init__(self) -> None:
        if not _genai_prices_installed():
            raise UserError("pricing hosted models needs genai-prices: pip install -e "
                            "'.[prices]' (it comes with the openai and anthropic extras)")
        self._lib: Any = None

    def cost(self, model: str, usage: Usage) -> float | None:
        ref = price_ref(model)
        if ref is None:
            return None
        if self._lib is None:
            import genai_prices

            self._lib = genai_prices
        lib = self._lib
        counts = lib.Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                           cache_read_tokens=usage.cached_input_tokens,
                           cache_write_tokens=usage.cache_write_tokens)
        try:
            price = lib.calc_price(counts, ref[1], provider_id=ref[0])
        except LookupError:
            return None
        return float(price.total_price)


def default_book() -> PriceBook | None:
    """genai-prices when installed, else None (every hosted call is then unpriced)."""
    try:
        return GenaiPrices()
    except UserError:
        return None


@dataclass(slots=True)
class Prices:
    """Overrides by model name (the full name, or its bare model id: ``gpt-4.1-mini``
    matches ``openai:gpt-4.1-mini``), then the fallback table."""

    overrides: Mapping[str, Price] = field(default_factory=dict)
    fallback: PriceBook | None = field(default_factory=default_book)

    def override(self, model: str) -> Price | None:
        if model in self.overrides:
            return self.overrides[model]
        bare = model.rsplit("#", 1)[-1] if "#" in model else model.partition(":")[2]
        return self.overrides.get(bare) if bare else None

    def cost(self, model: str, usage: Usage) -> float | None:
        price = self.override(model)
        if price is not None:
            return price.cost(usage)
        return None if self.fallback is None else self.fallback.cost(model, usage)


def layered(overrides: Mapping[str, Price], book: PriceBook | None) -> PriceBook:
    """``overrides`` (a pipeline's) over ``book`` (by default genai-prices' table); when
    ``book`` is a :class:`Prices`, its own overrides (the command line's) win."""
    if book is None:
        return Prices(overrides)
    if isinstance(book, Prices):
        return Prices({**overrides, **book.overrides}, book.fallback)
    return Prices(overrides, book)


_SAID_UNPRICED: set[str] = set()
"""Models this process has said it has no price for: a worker makes a pricer per run it
serves, and said so once per run (200 warnings for a backlog of 200 runs)."""


class Pricer:
    """Prices calls; says once per process and hosted model that it has no price.

    ``local``: the names of models that run here or are scripted (see
    ``orchestra.models.base.runs_locally``): with no price they cost nothing, silently."""

    def __init__(self, book: PriceBook | None = None, *,
                 local: Collection[str] = ()) -> None:
        self.book: PriceBook = book if book is not None else Prices()
        self.local: set[str] = set(local)
        self.unpriced: set[str] = set()
        """The hosted (or unknown) models this pricer found no price for."""
        self.uncounted: set[str] = set()
        """The local models this pricer found no price for (their cost is not counted)."""

    def priced(self, model: str, usage: Usage) -> Usage:
        """``usage`` with its cost from the book; with no price, the cost the model itself
        reported (0 from every adapter; a test double may set one)."""
        cost = self.book.cost(model, usage)
        if cost is None:
            if model in self.local:
                self.uncounted.add(model)
            elif model not in self.unpriced:
                self.unpriced.add(model)
                if model not in _SAID_UNPRICED:
                    _SAID_UNPRICED.add(model)
                    _log.warning(f"no price for {model}; costs are not counted", model=model)
            return usage
        return replace(usage, cost=cost)

    def bound(self, model: str, input_tokens: int, max_output: int) -> float:
        """The most a call could cost: its whole prompt uncached, ``max_output`` out."""
        return self.book.cost(model, Usage(input_tokens, max_output)) or 0.0

    def rates(self, model: str) -> Price | None:
        """The model's per-million prices as the book applies them (None: no price)."""
        book = self.book
        one = book.cost(model, Usage(MTOK, 0))
        if one is None:
            return None
        return Price(one, book.cost(model, Usage(0, MTOK)) or 0.0,
                     book.cost(model, Usage(MTOK, 0, cached_input_tokens=MTOK)),
                     book.cost(model, Usage(MTOK, 0, cache_write_tokens=MTOK)))


def parse_prices(entries: list[str] | str) -> dict[str, Price]:
    """``MODEL=IN/OUT[/CACHED[/WRITE]]`` entries (USD per million tokens) as overrides;
    a string holds several separated by ``;`` (``$ORCHESTRA_PRICES``)."""
    items = entries.split(";") if isinstance(entries, str) else list(entries)
    out: dict[str, Price] = {}
    for raw in items:
        entry = raw.strip()
        if not entry:
            continue
        model, sep, rates = entry.rpartition("=")
        try:
            numbers = [float(x) for x in rates.split("/")]
        except ValueError:
            numbers = []
        if not sep or not model or not 2 <= len(numbers) <= 4 or min(numbers) < 0:
            raise UserError(f"bad price {entry!r}: write MODEL=IN/OUT[/CACHED[/WRITE]] in USD "
                            "per million tokens, e.g. openai:gpt-4.1-mini=0.4/1.6/0.1")
        extra = [*numbers[2:], None, None]
        out[model.strip()] = Price(numbers[0], numbers[1], extra[0], extra[1])
    return out
