"""A pipeline's version: a fingerprint of what decides how its runs behave.

A run records the version of the pipeline that started it, and only a process whose
pipeline has that version takes it (``WorkFinder``, ``Coordinator.drive``); moving a run
to other code is explicit and checked (``orchestra.coordinator.upgrade``).

The fingerprint covers, per role, its instructions (with its answer format's), its input
and output schemas, its tools' names and schemas, its MCP servers by name, its model and
sampling settings, its compaction; and the routes by name, the pipeline's own model and
the ``version=`` string a user gives. Each *part* is hashed apart (``Version.parts``), so an
upgrade can say which part of which role changed. It is a hash of canonical JSON (sorted
keys, no memory addresses, no ``id()``), the same in every process that builds the same
pipeline; a pipeline computes it once (``Pipeline.fingerprint``), never per step.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any

import pydantic

from orchestra._errors import UserError
from orchestra.mcp.declare import MCPServer
from orchestra.models.base import ModelSettings
from orchestra.roles import Role

__all__ = ["Version", "VersionMismatchError", "check_version", "fingerprint", "label_of",
           "pipeline_version"]

_HASH = 12  # hex digits shown and stored: collisions among one store's versions are moot


@dataclass(frozen=True)
class Version:
    """A pipeline's version: ``id`` is what a run records and a claim filters on."""

    id: str
    """``label@hash`` (or the hash alone without a ``version=`` string)."""
    label: str
    parts: Mapping[str, str]
    """Each part's hash, by name: ``role:coder:instructions``, ``route:coder``..."""
    unpatched: Mapping[str, str] = field(default_factory=dict)
    """The parts as a task journaled before the roles' patches asks them (every
    ``patched(name)`` False, no patches declared): what ``upgrade --patched`` compares."""

    def manifest(self) -> dict[str, Any]:
        """What a run's ``run.created`` (or ``run.upgraded``) event keeps of it."""
        return {"id": self.id, "label": self.label, "parts": dict(self.parts)}


class VersionMismatchError(UserError):
    """A process was asked to run a run of another version than its pipeline's."""

    def __init__(self, run_id: str, recorded: str, here: str) -> None:
        self.run_id, self.recorded, self.here = run_id, recorded, here
        super().__init__(
            f"run {run_id} started on version {recorded}; this process serves version "
            f"{here}. Run a worker (or `orchestra resume`) with the code of {recorded}, or "
            f"move the run to this code with `orchestra upgrade {run_id}` (it checks the "
            "run's journal first and moves nothing if a completed step would differ)")


def check_version(run_id: str, recorded: str, here: Version) -> None:
    """``VersionMismatchError`` unless code of version ``here`` may run a run that
    recorded ``recorded`` (a run from before versions were recorded has none: any may)."""
    if recorded and recorded != here.id:
        raise VersionMismatchError(run_id, recorded, here.id)


def pipeline_version(*, name: str, roles: Sequence[Role], routes: Mapping[str, object],
                     model: object, mcp: Sequence[MCPServer], fails_run: bool,
                     label: str, board: Mapping[str, object] | None = None,
                     patched_routes: Collection[str] = ()) -> Version:
    """The version of a pipeline's declaration (pure: reads it, calls nothing).
    ``routes``: per finishing role, the role it forwards to or its route function;
    ``board``: how the board ends and chooses (``done``, ``control``, ``stall``);
    ``patched_routes``: the routes that take ``patched`` (before their patches, a route
    is the same function without them)."""
    parts: dict[str, str] = {"pipeline": _digest({
        "name": name, "model": _model_name(model), "mcp": sorted(s.name for s in mcp),
        "fail_run_on_task_failure": fails_run,
        "board": {k: _board_part(v) for k, v in sorted((board or {}).items())}})}
    unpatched: dict[str, str] = dict(parts)
    for source, target in sorted(routes.items()):
        name = target if isinstance(target, str) else _callable_name(target)
        unpatched[f"route:{source}"] = _digest(name)
        parts[f"route:{source}"] = _digest({"route": name, "patched": True}
                                           if source in patched_routes else name)
    for role in roles:
        for part, value in _role_parts(role, patched=True).items():
            parts[f"role:{role.name}:{part}"] = _digest(value)
        for part, value in _role_parts(role, patched=False).items():
            unpatched[f"role:{role.name}:{part}"] = _digest(value)
    return Version(label_of(label, fingerprint(parts, label)), label, parts, unpatched)


def fingerprint(parts: Mapping[str, str], label: str = "") -> str:
    """The hash of the parts and the label (hex, :data:`_HASH` digits)."""
    return _digest({"label": label, "parts": dict(parts)})


def label_of(label: str, digest: str) -> str:
    """A version's id: the user's string and the hash, or the hash alone."""
    return f"{label}@{digest}" if label else digest


def _role_parts(role: Role, *, patched: bool) -> dict[str, Any]:
    """A role's parts as a task with its patches (``patched``) or before them asks."""
    cls = type(role)
    out = role.output_schema()
    return {
        "instructions": role.system_prompt(None if patched else _off),
        "patches": sorted(cls.patches) if patched else [],
        "input": _schema(cls.input),
        "output": None if out is None else {"name": out.name, "schema": out.json_schema},
        "answer": None if cls.answer is None else _callable_name(type(cls.answer)),
        "tools": sorted((asdict(t.schema()) for t in role.bound_tools().values()),
                        key=lambda t: str(t["name"])),
        "approvals": sorted(cls.needs_approval),
        "mcp": sorted(s.name for s in cls.mcp),
        "model": {"model": _model_name(cls.model),
                  "settings": _settings(cls.settings)},
        "compaction": _plain(cls.compaction),
        "consumes": [_subscription(sub) for sub in cls.consumes],
        "labels": sorted(cls.labels),
        "posts_output": cls.posts_output,
    }


_LATER_SETTINGS = ("stop",)
"""ModelSettings fields added after fingerprints were first taken: left out at their
default, so an upgrade of orchestra changes no fingerprint of a run in flight."""


def _settings(settings: ModelSettings | None) -> dict[str, Any] | None:
    if settings is None:
        return None
    plain = asdict(settings)
    for name in _LATER_SETTINGS:
        if plain[name] == getattr(ModelSettings(), name):
            del plain[name]
    return plain


def _subscription(sub: object) -> Any:
    """A subscription by name: the entry type it consumes (or the join's name) and the
    names of its functions (their bodies are code, like a route's)."""
    fields = getattr(sub, "__dataclass_fields__", {})
    return {"kind": type(sub).__name__, **{k: _board_part(getattr(sub, k)) for k in fields}}


def _board_part(value: object) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if callable(value) and not hasattr(value, "__dataclass_fields__"):
        return _callable_name(value)
    return _plain(value)


def _off(name: str) -> bool:
    return False


def _schema(model: type[pydantic.BaseModel] | None) -> Any:
    return None if model is None else model.model_json_schema()


def _model_name(model: Any) -> str | None:
    if model is None or isinstance(model, str):
        return model
    return str(getattr(model, "name", None) or _callable_name(type(model)))


def _callable_name(fn: Any) -> str:
    """A function or class by where it is defined, never by address."""
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', type(fn).__name__)}"


def _plain(obj: Any) -> Any:
    """A policy object as JSON: its class and its plain public fields."""
    if is_dataclass(obj) and not isinstance(obj, type):  # no asdict: it deep-copies
        values = {f.name: getattr(obj, f.name) for f in fields(obj)}
    else:
        values = {k: v for k, v in getattr(obj, "__dict__", {}).items()
                  if not k.startswith("_")}
    return {"type": _callable_name(type(obj)),
            "fields": {k: v for k, v in sorted(values.items())
                       if isinstance(v, str | int | float | bool | type(None))}}


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      default=_callable_name)
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH]
