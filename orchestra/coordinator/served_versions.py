"""Which versions a serving process serves, learned without taking a run.

A worker (``orchestra worker``, ``orchestra serve``) rebuilds each run's pipeline from
the run's recorded reference and input, so the versions it serves are those its own
code gives the runs in the store. It learns them from the live runs its sweep reads
anyway (``WorkFinder``): once per (pipeline, version) pair it builds that pipeline here
and compares fingerprints. Its looks for work then name the versions served
(``claimable_runs(versions=...)``), so a run of another version is never found, driven
or claimed here: it waits for a process of its own version, or an ``orchestra upgrade``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from orchestra._errors import OrchestraError
from orchestra._log import get_logger
from orchestra._types import Run
from orchestra.coordinator.pipeline import Pipeline, load_pipeline

log = get_logger("orchestra.coordinator")


def rebuild(run: Run) -> Pipeline:
    """The pipeline this process's code builds for ``run``."""
    return load_pipeline(run.pipeline, run.input)


class ServedVersions:
    """The versions this process serves, among those the live runs record."""

    def __init__(self, build: Callable[[Run], Pipeline] = rebuild) -> None:
        self._build = build
        self._seen: dict[tuple[str, str], bool] = {}
        self.served: set[str] = set()
        """The versions of runs this process may take (a run with none: any process)."""

    def learn(self, runs: Iterable[Run]) -> None:
        """Look at the (pipeline, version) pairs not seen before: serve a version when the
        code here builds that pipeline with that fingerprint."""
        for run in runs:
            key = (run.pipeline, run.version)
            if not run.version or key in self._seen:
                continue
            try:
                here = self._build(run).fingerprint.id
            except OrchestraError:  # not buildable here: left to a process that can
                here = ""
            self._seen[key] = here == run.version
            if here == run.version:
                self.served.add(here)
            else:
                log.info("version not served here", run=run.id, pipeline=run.pipeline,
                         version=run.version, here=here or None)

    def serves(self, run: Run) -> bool:
        return not run.version or run.version in self.served
