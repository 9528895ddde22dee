"""Applying the pipeline's control to the triggers a commit calls for: a pure function
of the triggers, the control and (for a controller) its last choice."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from orchestra._errors import UserError
from orchestra.control import All, Choice, Controller, Option, Options, Priority
from orchestra.coordinator.pipeline import Pipeline, role_name
from orchestra.store.entry_protocol import NewTrigger
from orchestra.store.protocol import NewTask


def controller_role(pipeline: Pipeline) -> str | None:
    control = pipeline.control
    return role_name(control.role) if isinstance(control, Controller) else None


def choose(pipeline: Pipeline, wanted: Sequence[NewTrigger], about: dict[str, str]
           ) -> tuple[list[NewTrigger], list[NewTask]]:
    """The triggers to commit now, and the tasks to post (a controller's, to choose)."""
    if not wanted:
        return [], []
    control = pipeline.control
    if isinstance(control, All):
        return list(wanted), []
    if isinstance(control, Priority):
        rank = {role_name(r): i for i, r in enumerate(control.order)}
        best = min(rank.get(t.role, len(rank)) for t in wanted)
        return [t for t in wanted if rank.get(t.role, len(rank)) == best], []
    assert isinstance(control, Controller)
    options = Options(options=[Option(trigger=t.trigger, role=t.role,
                                      about=about.get(t.trigger, t.trigger), input=t.input)
                               for t in wanted])
    key = hashlib.sha256(json.dumps(sorted((t.trigger, t.role) for t in wanted)).encode())
    # the same eligible work asks the controller once
    return [], [NewTask(role_name(control.role), options.model_dump(mode="json"),
                        key="control:" + key.hexdigest()[:24])]


def chosen(options: Options, choice: Choice) -> list[NewTrigger]:
    """The triggers a controller chose (bypassing the control: it was the control)."""
    made = []
    for i in choice.chosen:
        if not 0 <= i < len(options.options):
            raise UserError(f"the controller chose option {i}; there are "
                            f"{len(options.options)} (0..{len(options.options) - 1})")
        o = options.options[i]
        made.append(NewTrigger(o.trigger, o.role, o.input))
    return made
