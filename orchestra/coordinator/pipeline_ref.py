"""How another process finds a pipeline again: a ``module:attr`` reference.

A run records its pipeline's reference; ``orchestra resume`` (or a worker) imports it
and rebuilds the pipeline from the run input. The reference is derived where the
pipeline is built, so users rarely write one: a top-level factory function taking
the run input, or a top-level name the pipeline is assigned to.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from orchestra._errors import UserError

HOW_TO_REF = ("build it in a top-level function `def make_pipeline(run_input) -> Pipeline` "
              "(or assign it to a top-level name) in an importable module, where it is found "
              "automatically, or pass Pipeline(..., ref='package.module:factory')")


def _importable_name(globals_: dict[str, Any]) -> str | None:
    """The name another process imports the frame's module by (a script: its path from cwd)."""
    name = globals_.get("__name__")
    if not isinstance(name, str) or name.startswith("<"):
        return None
    if name != "__main__":
        return name
    spec = globals_.get("__spec__")
    if spec is not None and getattr(spec, "name", None):
        return str(spec.name).removesuffix(".__main__")
    file = globals_.get("__file__")
    if not isinstance(file, str) or not file.endswith(".py"):
        return None
    try:
        rel = Path(file).resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return None  # a script outside the current directory: no import finds it
    parts = rel.with_suffix("").parts
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def _takes_run_input(fn: Any) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in params if p.default is p.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return bool(positional) and len(required) <= 1 and (not required or required[0]
                                                        is positional[0])


def derive_ref(frame: FrameType | None) -> tuple[str | None, tuple[dict[str, Any], str] | None]:
    """From the frame that builds a pipeline: ``(ref, None)`` when a top-level factory
    ``f(run_input)`` builds it; ``(None, (globals, module))`` when module-level code does
    (the name it is bound to is looked up later); ``(None, None)`` otherwise."""
    if frame is None:
        return None, None
    module = _importable_name(frame.f_globals)
    if module is None:
        return None, None
    code = frame.f_code
    if code.co_name == "<module>":
        return None, (frame.f_globals, module)
    fn = frame.f_globals.get(code.co_name)
    if getattr(fn, "__code__", None) is code and _takes_run_input(fn):
        return f"{module}:{code.co_name}", None
    return None, None


def module_ref(pipeline: object, origin: tuple[dict[str, Any], str]) -> str | None:
    """``module:name`` of the top-level name bound to ``pipeline``, if there is one."""
    globals_, module = origin
    for attr, value in list(globals_.items()):
        if value is pipeline and not attr.startswith("_"):
            return f"{module}:{attr}"
    return None


def import_ref(ref: str, module_name: str) -> ModuleType:
    """The module, or a ``UserError`` that shows the user's code, not orchestra's."""
    try:
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if os.getcwd() in sys.path or not _is_the_module(exc, module_name):
                raise
            sys.path.insert(0, os.getcwd())  # like `python -m`: the current directory
            return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if _is_the_module(exc, module_name):
            raise UserError(f"cannot import pipeline {ref!r}: no module named {exc.name!r} "
                            f"(run from the directory that holds it, or set PYTHONPATH)"
                            ) from None
        raise UserError(f"cannot import pipeline {ref!r}:\n{_user_frames(exc)}") from None
    except SyntaxError as exc:
        raise UserError(f"cannot import pipeline {ref!r}: {_syntax(exc)}") from None
    except Exception as exc:  # the user's module failed while it ran: their frames only
        raise UserError(f"cannot import pipeline {ref!r}:\n{_user_frames(exc)}") from None


def _is_the_module(exc: ModuleNotFoundError, module_name: str) -> bool:
    """Whether ``exc`` says the pipeline's module (or a parent package) is missing, rather
    than something that module imports."""
    return exc.name is not None and (module_name == exc.name
                                     or module_name.startswith(exc.name + "."))


def _syntax(exc: SyntaxError) -> str:
    """``badpipe.py line 2: '(' was never closed``, then the line and a caret."""
    where = f"{os.path.relpath(exc.filename) if exc.filename else '<unknown>'} line {exc.lineno}"
    text = f"{where}: {exc.msg}"
    if exc.text:
        line = exc.text.rstrip("\n")
        stripped = line.lstrip()
        caret = max((exc.offset or 1) - 1 - (len(line) - len(stripped)), 0)
        text += f"\n    {stripped}\n    {' ' * caret}^"
    return text


def _user_frames(exc: BaseException) -> str:
    """The traceback of ``exc`` without the frames of importlib and orchestra."""
    import traceback

    internal = (os.path.dirname(importlib.__file__), os.path.dirname(os.path.dirname(__file__)),
                "<frozen ")
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(internal)]
    lines = traceback.format_list(frames) + traceback.format_exception_only(type(exc), exc)
    return "".join(lines).rstrip("\n")
