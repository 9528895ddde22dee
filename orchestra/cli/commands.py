"""The commands that drive runs: run, resume, fork, prune, migrate, cancel, serve (the
worker has its own module, ``worker_cmd``)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from orchestra._errors import StoreAccessError, UserError
from orchestra._install import install_hint
from orchestra._types import Run
from orchestra.cli import inspect_cmds, run_options
from orchestra.cli.estimate import dry_run
from orchestra.cli.exit_codes import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_PAUSED, EXIT_WAITING
from orchestra.cli.interrupts import Interrupt
from orchestra.cli.progress import Progress
from orchestra.coordinator.coordinator import Coordinator, CoordinatorSettings
from orchestra.coordinator.pipeline import load_pipeline
from orchestra.coordinator.resumable import CANCELLABLE, check_resumable
from orchestra.coordinator.run_models import (
    SETTINGS_EVENT,
    model_settings,
    recorded_settings,
    run_cost_cap,
    split_models,
    with_models,
)
from orchestra.coordinator.run_models import models_for_run as _models
from orchestra.coordinator.run_models import run_cap as _run_cap
from orchestra.coordinator.versions import check_version
from orchestra.models.prices import Prices, parse_prices
from orchestra.store import Blackboard
from orchestra.store import url as store_url


@contextlib.asynccontextmanager
async def open_store(args: argparse.Namespace, *, must_exist: bool,
                     read_only: bool = False) -> AsyncIterator[Blackboard]:
    """The store ``--db`` names: a SQLite file, or a PostgreSQL URL. A command that only
    reads (``read_only``) opens a SQLite file it cannot write read-only; one that writes
    is refused at once, naming the file."""
    if must_exist and not store_url.exists(args.db):
        raise UserError(f"no store at {store_url.label(args.db)} (start one with "
                        "`orchestra demo` or `orchestra run`, or pass --db / set ORCHESTRA_DB)")
    path = store_url.sqlite_path(args.db)
    cannot_write = _cannot_write(Path(path)) if path is not None else ""
    if cannot_write and not read_only:
        _refuse(args, Path(args.db), cannot_write)
    store = await (store_url.open_store(args.db, read_only=True) if cannot_write
                   else store_url.open_store(args.db))
    try:
        yield store
    finally:
        await store.close()


def _cannot_write(path: Path) -> str:
    """Why the store at ``path`` cannot be written (or created), or ''."""
    directory = path.resolve().parent
    if not path.exists():
        if not directory.is_dir():
            return f"directory {directory} does not exist"
        return "" if os.access(directory, os.W_OK) else f"directory {directory} is read-only"
    if not os.access(path, os.W_OK):
        return "the file is read-only"
    if not os.access(directory, os.W_OK):
        return "its directory is read-only (SQLite writes its journal next to the file)"
    return ""


def _refuse(args: argparse.Namespace, path: Path, why: str) -> None:
    if not path.exists():
        raise StoreAccessError(f"cannot create the store {path}: {why}; create it first or "
                               "pass another --db")
    raise StoreAccessError(f"{path}: {why}, and `orchestra {args.command}` writes to the "
                           "store (runs, show, board and events still read it)")


def _settings(args: argparse.Namespace, *, shared: bool = False,
              cap: int | None = None, cost_cap: float | None = None) -> CoordinatorSettings:
    if args.concurrency < 1:
        raise UserError(f"--concurrency must be >= 1, got {args.concurrency}")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise UserError(f"--max-tokens must be >= 1, got {args.max_tokens}")
    if args.max_cost is not None and not args.max_cost > 0:
        raise UserError(f"--max-cost must be a positive number of US dollars, got "
                        f"{args.max_cost:g}")
    if not 0.3 <= args.lease <= 86400:
        raise UserError(f"--lease must be between 0.3 and 86400 seconds, got {args.lease:g}")
    return CoordinatorSettings(concurrency=args.concurrency,
                               max_tokens_per_run=args.max_tokens or cap,
                               max_cost_per_run=args.max_cost or cost_cap,
                               lease_seconds=args.lease, shared=shared)


def _prices(args: argparse.Namespace) -> Prices:
    """$ORCHESTRA_PRICES, then --price (later entries win), over genai-prices' table."""
    return Prices({**parse_prices(os.environ.get("ORCHESTRA_PRICES", "")),
                   **parse_prices(args.price)})


async def _drive(args: argparse.Namespace, state: Interrupt, store: Blackboard,
                 coord: Coordinator, run: Run, *, resume: bool) -> int:
    state.run_id = run.id
    progress = Progress(store, run.id, json_mode=args.json, tty=sys.stdout.isatty(),
                        after=run.last_seq if resume else 0, db=store_url.label(args.db),
                        live=not args.quiet, tokens=not args.no_tokens)
    watcher = asyncio.create_task(progress.watch())
    try:
        final = await (coord.resume(run.id) if resume else coord.drive(run.id))
    except asyncio.CancelledError:
        # Ctrl-C: leases back and the run left at once, so a resume need not wait for
        # expiry and `runs` says "interrupted" rather than waiting on a dead worker
        await asyncio.shield(coord.interrupted(run.id))
        raise
    finally:
        await progress.stop(watcher)
    await progress.summary(final, coord.pricer.unpriced, coord.pricer.uncounted)
    if not args.json and coord.pipeline.summary is not None:  # the pipeline's own story
        story = await coord.pipeline.summary(store, run.id)
        if story:
            print("\n" + "\n".join(story))
    return _exit_code(final.status)


def _exit_code(status: str) -> int:
    """The exit code of a command that drove a run until it ended in ``status``."""
    return {"completed": EXIT_OK, "waiting": EXIT_WAITING, "cancelled": EXIT_CANCELLED,
            "paused": EXIT_PAUSED}.get(status, EXIT_FAILED)


async def cmd_run(args: argparse.Namespace, state: Interrupt) -> int:
    """Start the pipeline the command line names (its input from its own options, or
    --input) and drive it: ``run_options`` knows which pipeline and which options."""
    # the pipeline's own code checks and reads its options (a spec file): off the loop
    ref, run_input, dirs = await asyncio.to_thread(run_options.run_input, args)
    split_models(args.model)  # bad flags fail before anything is created
    _settings(args)
    with contextlib.ExitStack() as made:  # like `orchestra demo`
        for directory in dirs:
            made.enter_context(_workspace(state, directory))
        return await _start(args, state, ref, run_input)


@contextlib.contextmanager
def _workspace(state: Interrupt, workspace: Path) -> Iterator[None]:
    """Create the run's workspace before the run is recorded (so no recorded run lacks
    it), and remove it again, if it was made here and is empty, when the command fails
    before recording the run: a failed command leaves no empty directory behind."""
    created = not workspace.exists()
    workspace.mkdir(parents=True, exist_ok=True)
    try:
        yield
    except BaseException:
        if created and state.run_id is None and not any(workspace.iterdir()):
            workspace.rmdir()
        raise


async def _start(args: argparse.Namespace, state: Interrupt, ref: str, run_input: Any) -> int:
    pipeline = load_pipeline(ref, run_input)
    # kept with the run, apart from its input (the user's): resume and workers honour them
    recorded = model_settings(args.model, max_tokens=args.max_tokens, max_cost=args.max_cost)
    prices = _prices(args)
    if getattr(args, "dry_run", False):  # names the models without loading them (no keys)
        return await dry_run(args, pipeline, recorded, prices, open_store)
    models = _models(pipeline, recorded, args.model)  # refuses --model for unknown roles
    settings = _settings(args)  # bad flags fail before the store file is created
    async with open_store(args, must_exist=False) as store:
        coord = Coordinator(store, pipeline, models=models, settings=settings, prices=prices)
        run = await coord.start(run_input, settings=recorded)
        state.run_id = run.id  # recorded: from here on, only resume may continue it
        if not args.json:
            print(f"run {run.id} started (store {store_url.label(args.db)})")
        return await _drive(args, state, store, coord, run, resume=False)


async def cmd_resume(args: argparse.Namespace, state: Interrupt) -> int:
    async with open_store(args, must_exist=True) as store:
        args.run = await inspect_cmds.resolve_run(store, args.run)
        run = await store.get_run(args.run)
        recorded = await recorded_settings(store, run)
        settings = _settings(args, cap=recorded.get("max_tokens"),  # bad flags fail first
                             cost_cap=recorded.get("max_cost"))
        # before any output or write: a refusal prints one line (a paused run's says how
        # to raise its cap), and a cap too low to resume with is not recorded
        again = f"orchestra resume {run.id} --db {store_url.label(args.db)}"
        check_resumable(run, settings.max_tokens_per_run, how=f"{again} --max-tokens N",
                        cost_cap=settings.max_cost_per_run, cost_how=f"{again} --max-cost USD")
        pipeline = load_pipeline(run.pipeline, run.input)
        check_version(run.id, run.version, pipeline.fingerprint)  # before any write, too
        models = _models(pipeline, recorded, args.model)
        if args.max_tokens is not None:  # recorded: it holds for later resumes and workers
            await _run_cap(store, run, args.max_tokens)
        if args.max_cost is not None:
            await run_cost_cap(store, run, args.max_cost)
        coord = Coordinator(store, pipeline, models=models, settings=settings,
                            prices=_prices(args))
        if not args.json:
            budget = (f"; token cap {settings.max_tokens_per_run}"
                      if settings.max_tokens_per_run else "")
            budget += (f"; cost cap ${settings.max_cost_per_run:g}"
                       if settings.max_cost_per_run else "")
            print(f"resuming run {run.id} ({run.status}{budget})")
        return await _drive(args, state, store, coord, run, resume=True)


async def cmd_fork(args: argparse.Namespace, state: Interrupt) -> int:
    async with open_store(args, must_exist=True) as store:
        source = await store.get_run(await inspect_cmds.resolve_run(store, args.run))
        recorded = with_models(await recorded_settings(store, source), args.model)
        pipeline = load_pipeline(source.pipeline, source.input)
        models = _models(pipeline, recorded, args.model)  # a bad --model fails before forking
        settings = _settings(args)
        if not args.no_run:  # the fork keeps the source's version: run here only if it is ours
            check_version(source.id, source.version, pipeline.fingerprint)
        fork = await store.fork_run(source.id, args.at)
        if args.model:  # the fork's own models, recorded for its later resumes
            await store.append_event(fork.id, SETTINGS_EVENT, recorded)
        if args.no_run or fork.status in ("completed", "cancelled"):
            inspect_cmds.emit(args, inspect_cmds.run_dict(fork),
                              f"run {fork.id} forked from {source.id} after event {args.at} "
                              f"({fork.status}); run it with: orchestra resume {fork.id} "
                              f"--db {store_url.label(args.db)}")
            return EXIT_OK
        if not args.json:
            print(f"run {fork.id} forked from {source.id} after event {args.at}; running it")
        coord = Coordinator(store, pipeline, models=models, settings=settings,
                            prices=_prices(args))
        return await _drive(args, state, store, coord, fork, resume=True)


def _timestamp(text: str | None) -> float | None:
    if text is None:
        return None
    import datetime

    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise UserError(f"--finished-before {text!r} is not a date; use YYYY-MM-DD or "
                        "YYYY-MM-DDTHH:MM (local time)") from None


async def cmd_prune(args: argparse.Namespace) -> int:
    before = _timestamp(args.finished_before)
    if before is None and args.keep is None:
        raise UserError("prune needs --finished-before DATE or --keep N (or both)")
    async with open_store(args, must_exist=True) as store:
        pruned = await store.prune_runs(finished_before=before, keep=args.keep,
                                        vacuum=args.vacuum, fold=not args.keep_tokens)
    freed = f"; {pruned.freed_bytes / 1e6:.1f} MB returned to the OS" if args.vacuum else ""
    folded = f"; {pruned.folded} token event(s) folded into their steps" if pruned.folded else ""
    inspect_cmds.emit(args, {"runs": pruned.runs, "rows": pruned.rows,
                             "freed_bytes": pruned.freed_bytes, "folded": pruned.folded},
                      f"pruned {len(pruned.runs)} finished run(s), {pruned.rows} rows"
                      f"{folded}{freed}")
    return EXIT_OK


async def cmd_migrate(args: argparse.Namespace) -> int:
    """Create the store, or apply its pending schema migrations."""
    async with open_store(args, must_exist=False) as store:
        runs = len(await store.list_runs(limit=1_000_000))
    where = store_url.label(args.db)
    inspect_cmds.emit(args, {"store": where, "runs": runs},
                      f"store {where} is up to date ({runs} runs)")
    return EXIT_OK


async def cmd_cancel(args: argparse.Namespace) -> int:
    async with open_store(args, must_exist=True) as store:
        args.run = await inspect_cmds.resolve_run(store, args.run)
        run = await store.get_run(args.run)
        if run.status == "cancelled":  # a second cancel: already done, not an error
            inspect_cmds.emit(args, {"run": run.id, "status": run.status},
                              f"run {run.id} was already cancelled")
            return EXIT_OK
        run = await store.set_run_status(args.run, "cancelled", only_from=CANCELLABLE)
        inspect_cmds.emit(args, {"run": run.id, "status": run.status},
                          f"run {run.id} cancelled")
        return EXIT_OK


async def cmd_serve(args: argparse.Namespace) -> int:
    """The HTTP API and a worker pool on the store, until interrupted."""
    try:
        from orchestra.server.security import load_token
        from orchestra.server.serve import serve, settings_from_args
    except ImportError as exc:
        raise UserError(f"`orchestra serve` needs the server extra: "
                        f"{install_hint('server')} ({exc})") from exc
    settings = settings_from_args(load_token(args.token_file), args.cors, args.workers,
                                  args.concurrency, args.max_tokens, args.model,
                                  args.ping_interval, args.liveness_interval, args.max_body)
    settings = dataclasses.replace(settings, prices=_prices(args), coordinator=dataclasses.replace(
        settings.coordinator, max_cost_per_run=_settings(args).max_cost_per_run))
    return await serve(args.db, args.host, args.port, settings, access_log=args.access_log)
