"""The stock pipeline with roles of your own, runnable from the command line.

A role that acts on what the stock roles finish (``agents.entries``) is one class; the
pipeline that adds it is one line in the same module::

    class DocsWriter(WorkspaceRole):
        \"\"\"You write the docs of one finished module.\"\"\"
        input = ModuleWritten
        consumes = [On(ModuleWritten, where=lambda m: m.accepted)]

    build = extend(DocsWriter)

``orchestra run --pipeline mymodule:build --spec SPEC --workspace DIR`` then runs it
with the stock options, and ``orchestra resume`` rebuilds it (the run records
``mymodule:build``, the top-level name the factory is bound to).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from agents.entries import AddedRole
from agents.pipeline import build_pipeline
from orchestra import Pipeline, UserError
from orchestra.coordinator.pipeline_options import declare_options
from orchestra.coordinator.pipeline_ref import HOW_TO_REF, derive_ref, module_ref


def extend(*roles: AddedRole, ref: str | None = None) -> Callable[[Any], Pipeline]:
    """A pipeline factory: the stock pipeline plus ``roles``, with its command line.
    ``ref`` (``"module:attr"``) is found by itself when the factory is bound to a
    top-level name of an importable module (where this is called)."""
    _, origin = derive_ref(sys._getframe(1))

    @declare_options("agents.cli_options:OPTIONS")
    def factory(run_input: Any) -> Pipeline:
        found = ref or (module_ref(factory, origin) if origin is not None else None)
        if found is None:
            raise UserError(f"extend({', '.join(_named(r) for r in roles)}) cannot be "
                            "rebuilt by another process: bind it to a top-level name of "
                            "an importable module (build = extend(...)) or pass "
                            f"ref='module:attr' ({HOW_TO_REF})")
        return build_pipeline(run_input, extra_roles=roles, ref=found)

    return factory


def _named(role: AddedRole) -> str:
    return role.__name__ if isinstance(role, type) else type(role).__name__
