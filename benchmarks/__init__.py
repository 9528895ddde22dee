"""Benchmark harness: orchestra against LangGraph on the fixed workload
(shared/bench/WORKLOAD.md). Run ``python -m benchmarks.run --help``."""
