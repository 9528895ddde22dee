"""``orchestra run``'s pipeline options: the pipeline declares them, the CLI adds them.

Which pipeline's options the command line has is decided before the arguments are
parsed (so ``--help`` lists them): the one ``--pipeline`` names, else the installed
demo's (``orchestra.cli.demo_entry``: the stock software pipeline, whose ``--spec``,
``--workspace``... are its own declaration). ``--input JSON`` gives any pipeline its
input as is (the only way for one that declares no options).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestra._errors import OrchestraError, UserError
from orchestra.coordinator.pipeline_options import OptionValue, PipelineOptions

DEST = "pipeline_option:"
"""Where the parsed value of option ``name`` sits: ``args.<DEST><name>``."""
HOW_OWN = "--pipeline MODULE:FACTORY (your own pipeline, its input with --input JSON)"


def pipeline_ref(args: Sequence[str]) -> str | None:
    """The ``--pipeline`` of a ``run`` command line, before it is parsed in full."""
    pre = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    pre.add_argument("--pipeline")
    try:
        ref: str | None = pre.parse_known_args(list(args))[0].pipeline
    except argparse.ArgumentError:  # `--pipeline` without its value: the full parse says so
        return None
    return ref


def add_pipeline_options(parser: argparse.ArgumentParser, args: Sequence[str]) -> str:
    """Add the options of the pipeline ``args`` runs to ``run``'s ``parser`` (importing
    the pipeline's module); ``args.pipeline_ref`` and ``args.pipeline_options`` say
    which, after the parse. Returns what an argument the parser does not know means."""
    from orchestra.cli.demo_entry import default_pipeline

    given = pipeline_ref(args)
    ref = given or default_pipeline()
    options = _options_of(ref) if ref else None
    parser.set_defaults(pipeline_ref=ref, pipeline_options=options)
    if ref is None:
        return f"no default pipeline is installed: give {HOW_OWN}"
    if options is None:
        return f"pipeline {ref} declares no options: give its input with --input JSON"
    whose = ref if given else f"{ref} (the default; `--pipeline REF --help` shows another's)"
    group = parser.add_argument_group(f"options of pipeline {whose}")
    for option in options.options:
        kwargs: dict[str, Any] = {"dest": DEST + option.name, "default": None}
        if option.type == "flag":
            kwargs["action"] = "store_true"
        else:
            kwargs["type"] = {"int": int, "float": float}.get(option.type, str)
            if option.choices:  # listed in help as {a,b} unless a metavar is declared
                kwargs["choices"] = option.choices
            if option.metavar or not option.choices:
                kwargs["metavar"] = option.shown.partition(" ")[2]
        shown_default = ("" if option.default in (None, False) or "default" in option.help
                         else f" (default {option.default})")
        required = " (required)" if option.required else ""
        try:
            group.add_argument(option.flag, help=option.help + shown_default + required,
                               **kwargs)
        except argparse.ArgumentError:
            raise UserError(f"pipeline {ref!r} declares the option {option.flag}, which "
                            "`orchestra run` has already: rename it") from None
    how = "" if given else "; `--pipeline REF --help` shows another's"
    return f"the options of pipeline {ref} are {', '.join(o.flag for o in options.options)}{how}"


def _options_of(ref: str) -> PipelineOptions | None:
    from orchestra.coordinator.pipeline import load_target
    from orchestra.coordinator.pipeline_options import declared_options

    return declared_options(load_target(ref))


def run_input(args: argparse.Namespace) -> tuple[str, Any, list[Path]]:
    """The pipeline ``run`` starts, its run input, and the directories the run works in
    (to make before the run is recorded): from the pipeline's options, else ``--input``."""
    ref: str | None = args.pipeline_ref
    options: PipelineOptions | None = args.pipeline_options
    if ref is None:
        raise UserError(f"`orchestra run` needs {HOW_OWN}: no default pipeline is installed")
    given: dict[str, OptionValue] = {} if options is None else {
        o.name: getattr(args, DEST + o.name) for o in options.options}
    if options is None or args.input:  # the input as is: the pipeline's factory checks it
        if any(v not in (None, False) for v in given.values()):
            raise UserError(f"pipeline {ref!r} takes its input either from its options or "
                            "as --input JSON, not both")
        try:
            return ref, json.loads(args.input) if args.input else {}, []
        except json.JSONDecodeError as exc:
            raise UserError(f"--input is not valid JSON: {exc}") from exc
    flags = ", ".join(o.flag for o in options.options)
    missing = [o.shown for o in options.options if o.required and given[o.name] is None]
    if missing:
        which = "" if args.pipeline else ", the default"
        raise UserError(f"`orchestra run` needs {' and '.join(missing)} (pipeline {ref}"
                        f"{which}), or {HOW_OWN}")
    values = options.values(given)
    try:
        run_input = options.run_input(values)
    except OrchestraError:
        raise
    except Exception as exc:
        raise UserError(f"pipeline {ref!r} could not make its input from {flags}: "
                        f"{type(exc).__name__}: {exc}") from exc
    dirs = [v for o in options.options if o.type == "dir"
            and isinstance(v := values.get(o.name), Path)]
    return ref, run_input, dirs
