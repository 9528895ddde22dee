"""Flags shared by the commands that start or drive runs."""

from __future__ import annotations

import argparse

from orchestra._types import DEFAULT_CONCURRENCY, DEFAULT_ROLE_CONCURRENCY


def model_flags(p: argparse.ArgumentParser, *, live: bool = False) -> None:
    """The model, limit and price flags; ``live``: also those of the live view (a
    command that drives a run and shows it while it goes)."""
    p.add_argument("--model", action="append", default=[], metavar="SPEC|ROLE=SPEC",
                   help="model for all roles (openai:gpt-4.1-mini, anthropic:..., ollama:..., "
                        "openai-compatible:URL#MODEL, gguf:PATH) or for one role (coder=...); "
                        "repeatable. Default: $ORCHESTRA_MODEL")
    p.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY,
                   help=f"tasks run at once (default {DEFAULT_CONCURRENCY}; each role also "
                        f"has its own limit, default {DEFAULT_ROLE_CONCURRENCY})")
    p.add_argument("--max-tokens", type=int, default=None,
                   help="stop the run (resumably) after this many tokens")
    p.add_argument("--max-cost", type=float, default=None, metavar="USD",
                   help="pause the run (resumably) before a model call that could take its "
                        "cost past this many US dollars")
    p.add_argument("--price", action="append", default=[], metavar="MODEL=IN/OUT[/CACHED]",
                   help="a model's price in USD per million tokens (input/output[/cached "
                        "input[/cache write]]), over the genai-prices table; repeatable. "
                        "Also $ORCHESTRA_PRICES, entries separated by ';'")
    p.add_argument("--lease", type=float, default=30.0, metavar="SECONDS",
                   help="task lease (default 30): a dead worker's tasks are taken over by "
                        "another serving process within this plus a third of it")
    if live:
        p.add_argument("-q", "--quiet", action="store_true",
                       help="no live view while the run goes (its summary only)")
        p.add_argument("--no-tokens", action="store_true",
                       help="the live view without what each agent is writing")
