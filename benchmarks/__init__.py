"""Benchmark harness: orchestra against LangGraph on the fixed workload
(shared/bench/WORKLOAD.md). Run ``python -m benchmarks.run --help``.

At the top: the harness (``run``, ``report``, ``measure``, ``workload``, ``crash`` for
S4) and the scenarios that run alone (``workers``, ``takeover``, ``retention``, the
pipeline-quality benchmark). ``sides/``: what is compared (orchestra, LangGraph, the
plain-Python floor); ``profiling/``: where a step's time goes in the store;
``postgres/``: the PostgreSQL store (``python -m benchmarks.postgres``); ``server/``:
``orchestra serve`` under load (``python -m benchmarks.server``)."""
