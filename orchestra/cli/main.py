"""``orchestra`` command line: run, watch, inspect and steer durable pipelines."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO, cast

from orchestra._errors import (
    NotAStoreError,
    OrchestraError,
    SchemaVersionError,
    ServerError,
    StoreAccessError,
    UserError,
)
from orchestra._install import DISTRIBUTION
from orchestra._types import RUN_STATUSES
from orchestra.cli.exit_codes import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SERVER,
    EXIT_STORE,
    EXIT_USAGE,
)
from orchestra.cli.flags import model_flags as _model_flags

EPILOG = """\
exit codes:
  0    success (a run: completed)
  1    the run failed (see `orchestra show RUN`)
  2    bad arguments, unknown run/approval id, or a run in the wrong state
  3    the --db file is not a usable orchestra store (not SQLite, corrupt, newer schema)
       or cannot be created or written (missing directory, permissions, read-only)
  4    the run is waiting for a human approval (`orchestra approve ID`, then resume)
  5    the run was cancelled
  6    the run is paused: its token cap (--max-tokens) was reached, or its next call
       could cross its cost cap (--max-cost); it continues with `orchestra resume RUN
       --max-tokens N` (N above the tokens it used) or `--max-cost USD` (above its cost)
  7    --server URL: nothing answers there, the token ($ORCHESTRA_TOKEN) was refused,
       or it is not an `orchestra serve` of this version
  130  interrupted (Ctrl-C); the run is resumable with `orchestra resume RUN`

Every command accepts --json for machine-readable output. --db and --json may come
before the command too (`orchestra --db runs.db --json runs`); the store defaults to
$ORCHESTRA_DB, else ./orchestra.db. A run id may be shortened to a unique prefix.
"""
DEFAULT_DB = "orchestra.db"
EXAMPLES = {
    "demo": "orchestra demo --workspace ./my-demo",
    "run": "orchestra run --pipeline mypkg.pipelines:make_pipeline --input '{\"topic\": \"x\"}'"
           "\n  orchestra run --spec spec.md --workspace ./ws --model ollama:qwen2.5-coder",
    "resume": "orchestra resume 52d2 --db runs.db",
    "fork": "orchestra fork 52d2 --at 40   # a new run as 52d2 was after event 40",
    "prune": "orchestra prune --finished-before 2026-11-01 --keep 20",
    "migrate": "orchestra migrate --db runs.db",
    "runs": "orchestra runs --active",
    "show": "orchestra show 52d2",
    "events": "orchestra events 52d2 --follow",
    "board": "orchestra board 52d2 handoffs",
    "approvals": "orchestra approvals            # the calls waiting for a person, all runs",
    "approve": "orchestra approve 8f3a --reason 'checked the diff'",
    "deny": "orchestra deny 8f3a --reason 'not this version'",
    "cancel": "orchestra cancel 52d2",
    "worker": "orchestra worker --db runs.db --idle-exit 60",
    "serve": "orchestra serve --db runs.db --port 8765",
    "copy": "orchestra copy --from orchestra.db --to postgresql://me@db/orchestra",
    "upgrade": "orchestra upgrade 52d2   # move it to this code's version, if it replays alike",
}
"""One example per command, shown at the end of its ``--help`` (tested: every command)."""
DRIVING_COMMANDS = frozenset({"demo", "run", "resume", "fork", "worker", "serve"})
"""Commands that drive runs: their console may go away (`| head`), their runs go on."""


class UsageError(SystemExit):
    """Bad command-line arguments; ``main`` reports it as text or, with --json, as JSON."""

    def __init__(self, message: str) -> None:
        super().__init__(EXIT_USAGE)
        self.message = message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see `{self.prog} --help`)")


class _CommandParser(_Parser):
    """A command's parser: options may sit anywhere among its positionals.

    argparse matches positionals in runs: in ``board RUN --json handoffs`` it gives RUN
    and the optional KIND (as nothing) to the first run, then finds ``handoffs``
    unrecognized. Intermixed parsing reads the options first, then the positionals.
    """

    _inner = False
    before_parse: Callable[[argparse.ArgumentParser, Sequence[str]], str] | None = None
    """Adds what depends on the arguments themselves (``run``: its pipeline's options);
    returns what an unrecognized argument means then."""

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None,
                         ) -> tuple[argparse.Namespace, list[str]]:
        if self._inner:  # the intermixed parse's own two passes
            return super().parse_known_args(args, namespace)
        add, why = self.before_parse, ""
        if add is not None:
            self.before_parse = None  # once
            why = add(self, list(sys.argv[1:] if args is None else args))
        self._inner = True
        try:
            parsed, extras = self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inner = False
        if extras and why:
            raise UsageError(f"unrecognized arguments: {' '.join(extras)} ({why})")
        return parsed, extras


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=None,
                   help="the store: a file, or postgresql://user:pass@host:port/db "
                        "(default $ORCHESTRA_DB, else ./orchestra.db)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _version() -> str:
    """Read from the installed metadata: importing the package would slow down `--help`."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "(not installed)"


class _VersionAction(argparse.Action):
    """Looks the version up only when asked: reading package metadata costs ~0.2 s."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        print(f"orchestra {_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="orchestra", description="Durable multi-agent pipelines on SQLite.",
                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction, nargs=0,
                        help="print the version and exit")
    # global options, accepted before the command too (`orchestra --db x.db --json runs`)
    parser.add_argument("--db", dest="db_first", default=None,
                        help="the store: a file, or postgresql://user:pass@host:port/db "
                        "(default $ORCHESTRA_DB, else ./orchestra.db)")
    parser.add_argument("--json", dest="json_first", action="store_true",
                        help="machine-readable output")
    sub = parser.add_subparsers(dest="command", parser_class=_CommandParser, metavar="COMMAND")

    p = sub.add_parser("demo", help="run the stock pipeline offline on a bundled spec")
    _common(p)
    _model_flags(p, live=True)
    p.add_argument("--workspace", default="orchestra-demo",
                   help="directory the agents write to (default ./orchestra-demo; must be empty)")

    p = sub.add_parser("run", help="start a run of a pipeline")
    _common(p)
    _model_flags(p, live=True)
    p.add_argument("--pipeline", help="your pipeline factory, 'package.module:factory' "
                                      "(default: the installed demo's, the stock pipeline)")
    p.add_argument("--input", help="run input as JSON, as is (instead of the pipeline's "
                                   "own options below, if it declares some)")
    p.add_argument("--dry-run", action="store_true",
                   help="run nothing: the models each role would use, their prices, and an "
                        "estimate of the cost from the pipeline's past runs")

    p = sub.add_parser("resume", help="continue a run after a crash, Ctrl-C, or approval")
    _common(p)
    _model_flags(p, live=True)
    p.add_argument("run", help="run id")

    p = sub.add_parser("fork", help="a new run as RUN was right after event SEQ, then run it")
    _common(p)
    _model_flags(p, live=True)
    p.add_argument("run", help="run id")
    p.add_argument("--at", type=int, required=True, metavar="SEQ",
                   help="event seq to fork after (see `orchestra events RUN`)")
    p.add_argument("--no-run", action="store_true", help="only create the fork")

    p = sub.add_parser("prune", help="delete finished runs completely; fold the token "
                       "deltas of the runs kept into their steps")
    _common(p)
    p.add_argument("--finished-before", metavar="DATE",
                   help="runs finished before this local date/time (2026-11-01, "
                        "2026-11-01T12:00)")
    p.add_argument("--keep", type=int, metavar="N", help="keep the N most recently finished")
    p.add_argument("--vacuum", action="store_true",
                   help="also return the freed space to the OS (rewrites the file)")
    p.add_argument("--keep-tokens", action="store_true",
                   help="keep every model.delta event of the runs kept (by default a "
                        "completed call's are folded: its step holds the whole answer)")

    p = sub.add_parser("migrate", help="create the store or bring its schema up to date")
    _common(p)

    p = sub.add_parser("runs", help="list runs")
    _common(p)
    p.add_argument("--active", action="store_true",
                   help="only runs still going (pending, running, waiting); a paused or "
                        "failed run waits for `orchestra resume`")
    p.add_argument("--status", choices=RUN_STATUSES, help="only runs with this status")
    p.add_argument("--pipeline", help="only runs of pipelines whose name contains this")
    p.add_argument("--limit", type=int, default=50, help="newest N runs (default 50)")

    p = sub.add_parser("show", help="a run's status, tasks, agents and steps")
    _common(p)
    p.add_argument("run")

    p = sub.add_parser("events", help="a run's event log")
    _common(p)
    p.add_argument("run")
    p.add_argument("--after", type=int, default=0, metavar="SEQ", help="events after this seq")
    p.add_argument("--follow", action="store_true", help="keep printing new events")
    p.add_argument("--no-tokens", action="store_true", help="without the models' text deltas")

    p = sub.add_parser("board", help="a run's plans, handoffs, notes and entries")
    _common(p)
    p.add_argument("run")
    p.add_argument("kind", nargs="?",
                   choices=["plans", "handoffs", "notes", "approvals", "entries"])
    p.add_argument("--search", help="full-text search of notes")
    p.add_argument("--open", action="store_true",
                   help="print (and open) the run's live page on `orchestra serve` instead")
    p.add_argument("--server", metavar="URL", help="with --open: the server (default "
                                                  "$ORCHESTRA_SERVER or http://127.0.0.1:8765)")

    p = sub.add_parser("approvals", help="tool calls waiting for a person (in doubt too)")
    _common(p)
    p.add_argument("run", nargs="?", help="only this run's (default: every waiting run's)")

    for name, verb in (("approve", "approve"), ("deny", "deny")):
        p = sub.add_parser(name, help=f"{verb} a pending tool call")
        _common(p)
        p.add_argument("approval", help="approval id (see `orchestra approvals`)")
        p.add_argument("--by", default=None, help="who decides (default: $USER)")
        p.add_argument("--reason", default=None, help="why (the model sees a denial's reason)")

    p = sub.add_parser("cancel", help="cancel a run")
    _common(p)
    p.add_argument("run")

    p = sub.add_parser("worker", help="serve runs from the store (several may run at once)")
    _common(p)
    _model_flags(p)
    p.add_argument("--run", help="serve only this run")
    p.add_argument("--idle-exit", type=float, default=None, metavar="SECONDS",
                   help="exit after this long with no active runs")
    _serve_parser(sub)
    from orchestra.cli import copy_cmd

    copy_cmd.add_parser(sub)
    from orchestra.cli import upgrade_cmd

    upgrade_cmd.add_parser(sub)
    for name in ("runs", "show", "events", "approve", "deny", "cancel", "resume"):
        sub.choices[name].add_argument(
            "--server", metavar="URL", help="work through `orchestra serve` at URL instead "
                                            "of the --db file (token: $ORCHESTRA_TOKEN)")
    from orchestra.cli.run_options import add_pipeline_options

    sub.choices["run"].before_parse = add_pipeline_options
    summaries = {a.dest: a.help for a in sub._choices_actions}
    for name, command in sub.choices.items():  # `orchestra X --help`: what, then an example
        text = str(summaries[name])
        command.description = f"{text[:1].upper()}{text[1:]}."
        command.epilog = f"example:\n  {EXAMPLES[name]}"
        command.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


def _serve_parser(sub: argparse._SubParsersAction[_CommandParser]) -> None:
    p = sub.add_parser("serve", help="the HTTP API (+ SSE) and a worker pool on the store")
    _common(p)
    _model_flags(p)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; others need a token)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free)")
    p.add_argument("--workers", type=int, default=4,
                   help="runs driven at once by this server (default 4; 0: API only)")
    p.add_argument("--token-file", help="file holding the bearer token (default: "
                                        "$ORCHESTRA_TOKEN; none: no auth, loopback only)")
    p.add_argument("--cors", action="append", default=[], metavar="ORIGIN",
                   help="allow browser calls from this origin (repeatable; default none)")
    p.add_argument("--ping-interval", type=float, default=15.0, metavar="SECONDS",
                   help="keepalive on a quiet event stream (default 15)")
    p.add_argument("--liveness-interval", type=float, default=5.0, metavar="SECONDS",
                   help="how often a quiet stream checks its run is served (default 5)")
    p.add_argument("--max-body", type=int, default=1 << 20, metavar="BYTES",
                   help="largest request body (default 1 MiB)")
    p.add_argument("--access-log", action="store_true", help="log every request to stderr")


def _configure_logging(verbose: bool) -> None:
    """Warnings and errors to stderr (info with ORCHESTRA_LOG=info); never to stdout."""
    import logging
    import os

    import structlog

    from orchestra._log import library_logs_one_line, stderr

    level = getattr(logging, os.environ.get("ORCHESTRA_LOG", "info" if verbose else
                                            "warning").upper(), logging.WARNING)
    # sys.stderr looked up at each write: a caller (a test) may swap it after this
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(level),
                        logger_factory=structlog.PrintLoggerFactory(stderr()))
    library_logs_one_line(max(level, logging.WARNING))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; whatever it prints goes out masked of every API key and password."""
    from orchestra._secrets import SECRETS, RedactingStream

    out, err = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, RedactingStream(out, SECRETS))
    sys.stderr = cast(TextIO, RedactingStream(err, SECRETS))
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        # a script asking for --json gets JSON on stdout even for bad arguments
        return _fail(argparse.Namespace(json="--json" in argv), EXIT_USAGE, exc.message)
    except UserError as exc:  # `run`'s pipeline could not tell its options
        return _fail(argparse.Namespace(json="--json" in argv), EXIT_USAGE, exc)
    if args.command is None:  # bare `orchestra`: what it can do
        build_parser().print_help()
        return EXIT_OK
    args.json = args.json or args.json_first
    args.db = args.db or args.db_first or os.environ.get("ORCHESTRA_DB") or DEFAULT_DB
    if args.command in DRIVING_COMMANDS:
        from orchestra.cli.console import DetachingStream

        sys.stdout = cast(TextIO, DetachingStream(sys.stdout))
        sys.stderr = cast(TextIO, DetachingStream(sys.stderr))
    _configure_logging(verbose=False)
    from orchestra.cli.dispatch import dispatch  # imported after parsing: `--help` stays instant
    from orchestra.cli.interrupts import Interrupt

    state = Interrupt()  # what a driving command has under way, for Ctrl-C's message
    try:
        if args.command == "board" and (args.open or args.server):
            from orchestra.cli import board_page

            return board_page.open_page(args)
        if getattr(args, "server", None):
            from orchestra.cli import remote

            return remote.dispatch(args)
        return asyncio.run(dispatch(args, state))
    except KeyboardInterrupt:
        if args.command not in DRIVING_COMMANDS:  # a viewer speaks for no run: just leave
            return EXIT_INTERRUPTED
        from orchestra.cli.interrupts import interrupted

        print(interrupted(args, state), file=sys.stderr)
        return EXIT_INTERRUPTED
    except (NotAStoreError, SchemaVersionError, StoreAccessError) as exc:
        return _fail(args, EXIT_STORE, exc)
    except ServerError as exc:
        return _fail(args, EXIT_SERVER, exc)
    except UserError as exc:
        return _fail(args, EXIT_USAGE, exc)
    except OrchestraError as exc:
        return _fail(args, EXIT_FAILED, exc)
    except BrokenPipeError:  # `orchestra events RUN | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def _fail(args: argparse.Namespace, code: int, exc: Exception | str) -> int:
    if getattr(args, "json", False):
        kind = "UsageError" if isinstance(exc, str) else type(exc).__name__
        print(json.dumps({"error": str(exc), "type": kind, "exit": code}))
    else:
        print(f"orchestra: error: {exc}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
