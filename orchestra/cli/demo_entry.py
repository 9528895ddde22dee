"""The demo a package registers (entry point group ``orchestra.demo``; this project's
stock one is registered in its pyproject.toml): what ``orchestra demo`` runs, and the
pipeline ``orchestra run`` runs when no ``--pipeline`` is given."""

from __future__ import annotations

from importlib.metadata import entry_points

from orchestra._errors import UserError
from orchestra._install import DISTRIBUTION
from orchestra.coordinator.pipeline import Demo

GROUP = "orchestra.demo"


def load_demo() -> Demo:
    """The installed demo (the first registered, by name)."""
    found = sorted(entry_points(group=GROUP), key=lambda e: e.name)
    if not found:
        raise UserError(f"no demo is installed (entry point group {GROUP!r}): pip install -e . "
                        f"in an orchestra checkout, or pip install {DISTRIBUTION}")
    demo = found[0].load()
    if not isinstance(demo, Demo):
        raise UserError(f"entry point {found[0].value!r} ({GROUP}) is not an "
                        "orchestra.coordinator.pipeline.Demo")
    return demo


def default_pipeline() -> str | None:
    """The installed demo's pipeline reference, if a demo is installed (without loading
    it: ``orchestra run --help`` reads it)."""
    found = sorted(entry_points(group=GROUP), key=lambda e: e.name)
    return load_demo().pipeline if found else None
