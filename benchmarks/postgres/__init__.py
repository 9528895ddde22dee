"""The PostgreSQL store under the workload: ``python -m benchmarks.postgres`` (``compare``)
and the pieces it runs or that run alone (drivers, round trips, waits, workers)."""
