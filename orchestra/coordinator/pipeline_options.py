"""A pipeline's own command-line options, and how their values make its run input.

The CLI knows no pipeline: ``orchestra run --pipeline mypkg.flows:make_flow --topic x``
asks the factory for its options, adds them to the command line (and to ``orchestra run
--help``), checks the values and hands them to the pipeline, which makes its run input::

    OPTIONS = PipelineOptions(
        (Option("topic", help="what to write about", required=True),
         Option("drafts", "int", default=2, minimum=1, help="drafts before the critic")),
        run_input=lambda values: {"topic": values.text("topic"),
                                  "drafts": values.integer("drafts")})

    @declare_options(OPTIONS)  # or "mypkg.flows_cli:OPTIONS", read when the CLI asks
    def make_flow(run_input: dict[str, Any]) -> Pipeline: ...

The stock software pipeline declares its ``--spec``, ``--workspace``... the same way
(``agents/cli_options.py``). A pipeline that declares none takes ``--input JSON``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from orchestra._errors import UserError

__all__ = ["Option", "OptionType", "OptionValue", "OptionValues", "PipelineOptions",
           "declare_options", "declared_options"]

OptionType = Literal["text", "int", "float", "flag", "file", "dir"]
"""``file``: an existing file (its path); ``dir``: a directory the run works in (made
before the run is recorded, removed again if the command fails before that and it is
still empty); ``flag``: present or not."""
OptionValue = str | int | float | bool | Path | None
_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
_METAVARS: dict[OptionType, str] = {"text": "TEXT", "int": "N", "float": "X", "flag": "",
                                    "file": "FILE", "dir": "DIR"}
_DEFAULT_TYPES: dict[OptionType, tuple[type, ...]] = {
    "text": (str,), "int": (int,), "float": (int, float), "flag": (bool,), "file": (str,),
    "dir": (str,)}
_MARK = "__orchestra_options__"
F = TypeVar("F")


@dataclass(frozen=True)
class Option:
    """One option, ``--name``, of a pipeline's command line."""

    name: str
    """The flag without its dashes (``time-budget``: ``--time-budget``); values are read
    by this name."""
    type: OptionType = "text"
    default: str | int | float | bool | None = None
    """The value when the option is not given (``None``: absent; a flag: ``False``)."""
    help: str = ""
    """One line for ``orchestra run --help``."""
    required: bool = False
    choices: tuple[str, ...] = ()
    """The values a ``text`` option accepts (any, when empty)."""
    minimum: float | None = None
    """The smallest value an ``int`` or ``float`` option accepts."""
    metavar: str = ""
    """The value's name in help and errors (default: FILE, DIR, N, X, TEXT by type)."""

    def __post_init__(self) -> None:
        def bad(why: str) -> UserError:
            return UserError(f"Option {self.name!r}: {why}")

        if not _NAME.fullmatch(self.name):
            raise bad("a name is lower-case words joined by '-' (e.g. 'time-budget')")
        if self.type not in _METAVARS:
            raise bad(f"type {self.type!r} is not one of {', '.join(_METAVARS)}")
        if self.default is not None and (
                not isinstance(self.default, _DEFAULT_TYPES[self.type])
                or (isinstance(self.default, bool) and self.type != "flag")):
            raise bad(f"default {self.default!r} is not a {self.type} value")
        if self.required and self.default is not None:
            raise bad("a required option has no default")
        if self.choices and (self.type != "text" or (self.default is not None
                                                     and self.default not in self.choices)):
            raise bad(f"choices {list(self.choices)} need type 'text' and a default among them")
        if self.minimum is not None and self.type not in ("int", "float"):
            raise bad("a minimum needs type 'int' or 'float'")

    @property
    def flag(self) -> str:
        return f"--{self.name}"

    @property
    def shown(self) -> str:
        """``--spec FILE``: how help and errors name the option."""
        value = self.metavar or _METAVARS[self.type]
        return f"{self.flag} {value}" if value else self.flag

    def check(self, value: OptionValue) -> OptionValue:
        """``value`` as the pipeline gets it (a ``dir`` resolved), or a ``UserError``
        that quotes it and says what the option takes."""
        if value is None or isinstance(value, bool):
            return value
        if self.minimum is not None and isinstance(value, int | float) \
                and value < self.minimum:
            low = "negative" if self.minimum == 0 else f"below {self.minimum:g}"
            raise UserError(f"{self.flag} {value:g} is {low}: give {self.shown} of "
                            f"{self.minimum:g} or more")
        if self.type == "file":
            path = Path(str(value))
            if not path.is_file():
                what = "is a directory, not a file" if path.is_dir() else "does not exist"
                raise UserError(f"{self.flag} {path}: {path} {what} (give {self.shown})")
            return path
        if self.type == "dir":
            path = Path(str(value)).resolve()
            if path.exists() and not path.is_dir():
                raise UserError(f"{self.flag} {path} is a file, not a directory")
            return path
        return value


@dataclass(frozen=True)
class OptionValues:
    """The checked values of a pipeline's options, read by option name and type."""

    values: Mapping[str, OptionValue]

    def get(self, name: str) -> OptionValue:
        if name not in self.values:
            raise UserError(f"no option {name!r} was declared; the options are "
                            f"{sorted(self.values)}")
        return self.values[name]

    def text(self, name: str) -> str:
        return str(self._given(name, str))

    def integer(self, name: str) -> int:
        value = self._given(name, int)
        assert isinstance(value, int)
        return value

    def number(self, name: str) -> float:
        value = self._given(name, int | float)
        assert isinstance(value, int | float)
        return float(value)

    def flag(self, name: str) -> bool:
        return bool(self.get(name))

    def path(self, name: str) -> Path:
        value = self._given(name, Path)
        assert isinstance(value, Path)
        return value

    def _given(self, name: str, kind: Any) -> OptionValue:
        value = self.get(name)
        if value is None or not isinstance(value, kind):
            raise UserError(f"option {name!r} holds {value!r}, not a {kind}: declare it with "
                            "that type, and a default or required=True")
        return value


@dataclass(frozen=True)
class PipelineOptions:
    """A pipeline's options and the function that makes its run input from their values
    (the time a run starts is known there: a budget can become a deadline)."""

    options: tuple[Option, ...]
    run_input: Callable[[OptionValues], Any]

    def __post_init__(self) -> None:
        names = [o.name for o in self.options]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UserError(f"PipelineOptions: option(s) {twice} declared twice")

    def values(self, given: Mapping[str, OptionValue]) -> OptionValues:
        """The values of the options, each checked (:meth:`Option.check`); an option not
        given takes its default."""
        out: dict[str, OptionValue] = {}
        for option in self.options:
            value = given.get(option.name)
            if value is None:
                value = False if option.type == "flag" and option.default is None \
                    else option.default
            out[option.name] = option.check(value)
        return OptionValues(out)


def declare_options(options: PipelineOptions | str) -> Callable[[F], F]:
    """Mark a pipeline factory (or a Pipeline) with its command-line options: the
    declaration itself, or its ``module:attr`` reference (read only when the CLI asks:
    the declaring module may import the pipeline's own)."""
    def mark(target: F) -> F:
        setattr(target, _MARK, options)
        return target

    return mark


def declared_options(target: object) -> PipelineOptions | None:
    """The options ``target`` was marked with (:func:`declare_options`), if any."""
    found = getattr(target, _MARK, None)
    if found is None or isinstance(found, PipelineOptions):
        return found
    if isinstance(found, str):
        from orchestra.coordinator.pipeline_ref import import_ref

        module, _, attr = found.partition(":")
        found = getattr(import_ref(found, module), attr, None)
        if isinstance(found, PipelineOptions):
            return found
    raise UserError(f"{target!r} declares options {found!r}; declare_options takes a "
                    "PipelineOptions or its 'module:attr' reference")
