"""Does the stock pipeline beat the same model asked once? Hidden tests on a kata set.

For each kata of a set (``benchmarks/katas``, or ``--katas DIR``), interleaved and side
by side: (a) the one-shot baseline, one plain-text chat-completions request whose code
blocks become the modules (``benchmarks/one_shot.py``), and ``--best-of N`` - 1 more
such answers sampled at temperature 0.7, each scored on its own (the best of them is
what a perfect judge reaches by selection alone), and (b) ``orchestra run --spec S
--workspace W --model SPEC --db D`` as a user runs it, killed at ``--limit`` seconds
(``benchmarks/orchestra_run.py``). Then the kata's hidden tests run on each workspace.
One JSON line per side and run goes to ``--out``; ``--table`` prints the markdown table
of a results file: per kata and in total, hidden tests passed, wall time, tokens,
model calls, prompt tokens evaluated / reused by the server's cache, runs that ended
by themselves.

    python -m benchmarks.pipeline_quality --runs 3 --out quality.jsonl --label 1.5b \\
        --model openai-compatible:http://127.0.0.1:8080/v1#local
    python -m benchmarks.pipeline_quality --table quality.jsonl
    python -m benchmarks.pipeline_quality --summary quality.jsonl  # per spec, side by side
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.katas import KATAS_DIR, Kata, kata_names, load_kata, score_hidden
from benchmarks.one_shot import endpoint, run_baseline
from benchmarks.orchestra_run import run_orchestra
from orchestra.errors import UserError
from orchestra.models.spec import parse_model_spec

SIDES = ("baseline", "orchestra")


SAMPLE_TEMPERATURE = 0.7


def measure(kata: Kata, side: str, model: str, *, limit: float, max_tokens: int,
            keep: bool, best_of: int = 1) -> dict[str, Any]:
    """One side's run on one kata, scored by the hidden tests."""
    root = Path(tempfile.mkdtemp(prefix=f"quality-{kata.name}-{side}-"))
    workspace = root / "ws"
    workspace.mkdir()
    if side == "baseline":
        row = run_baseline(kata, model, workspace, limit=limit, max_tokens=max_tokens)
    else:
        row = run_orchestra(kata, model, root, limit=limit)
    row = {"spec": kata.name, "set": kata.root.name, **row,
           "model": str(parse_model_spec(model)),
           "hidden": list(score_hidden(kata, workspace)),
           "wrote_every_module": all(m in row["files"] for m in kata.modules)}
    if side == "baseline" and best_of > 1:
        row["samples"] = [row["hidden"]] + [
            _sample(kata, model, root / f"sample{n}", limit=limit, max_tokens=max_tokens,
                    seed=n) for n in range(1, best_of)]
    if keep:
        row["dir"] = str(root)
    else:
        shutil.rmtree(root, ignore_errors=True)
    return row


def _sample(kata: Kata, model: str, root: Path, *, limit: float, max_tokens: int,
            seed: int) -> list[int]:
    """One more one-shot answer, sampled: its hidden tests (passed, total)."""
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    run_baseline(kata, model, workspace, limit=limit, max_tokens=max_tokens,
                 temperature=SAMPLE_TEMPERATURE, seed=seed)
    return list(score_hidden(kata, workspace))


def summary(rows: list[dict[str, Any]]) -> str:
    """Per set and spec, side by side: hidden tests passed by the pipeline, by the
    one-shot answer and by the best of the sampled one-shot answers; the pipeline's
    wall time, model calls and whether it ended by itself (sums over runs)."""
    out = ["| model | set | spec | pipeline | one-shot | best of N one-shot | pipeline wall "
           "(max) | pipeline model calls (max) | ended by itself |",
           "|---|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple[str, str, str], dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        label = r.get("label") or r["model"].split("#")[-1].split("?")[0]
        key = (label, str(r.get("set", "katas")), r["spec"])
        groups.setdefault(key, {}).setdefault(r["side"], []).append(r)
    totals: dict[tuple[str, str], list[list[int]]] = {}

    def cell(passed: int, total: int) -> str:
        return f"{passed}/{total}" if total else "n/a"

    for (label, kset, spec), sides in sorted(groups.items()):
        mine, base = sides.get("orchestra", []), sides.get("baseline", [])
        figures = [[sum(r["hidden"][0] for r in mine), sum(r["hidden"][1] for r in mine)],
                   [sum(r["hidden"][0] for r in base), sum(r["hidden"][1] for r in base)],
                   [sum(max(s[0] for s in r.get("samples") or [r["hidden"]]) for r in base),
                    sum(r["hidden"][1] for r in base)]]
        run = totals.setdefault((label, kset), [[0, 0], [0, 0], [0, 0], [0, 0, 0]])
        for acc, fig in zip(run, figures, strict=False):
            acc[0] += fig[0]
            acc[1] += fig[1]
        ended = sum(r["ended_by_itself"] for r in mine)
        run[3][0] += ended
        run[3][1] += len(mine)
        wall = max((r["wall_s"] for r in mine), default=0)
        run[3][2] = max(run[3][2], int(wall))
        out.append(f"| {label} | {kset} | {spec} | " + " | ".join(cell(*f) for f in figures)
                   + f" | {wall:g} s | {max((r['model_calls'] for r in mine), default=0)} | "
                   f"{ended}/{len(mine)} |")
    for (label, kset), (p, o, b, e) in sorted(totals.items()):
        pct = [f" ({100 * x[0] / x[1]:.0f}%)" if x[1] else "" for x in (p, o, b)]
        out.append(f"| {label} | {kset} | **all** | {cell(*p)}{pct[0]} | {cell(*o)}{pct[1]} | "
                   f"{cell(*b)}{pct[2]} | {e[2]} s | | {e[0]}/{e[1]} |")
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
        label = r.get("label") or r["model"].split("#")[-1].split("?")[0]
        groups.setdefault((label, r["spec"], r["side"]), []).append(r)
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


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--model", help="model spec (both sides); e.g. "
                        "openai-compatible:http://127.0.0.1:8080/v1#local")
    parser.add_argument("--katas", type=Path, default=KATAS_DIR, metavar="DIR",
                        help="the kata set: a directory with specs/NAME.md and hidden/ "
                             "(default: benchmarks/katas)")
    parser.add_argument("--specs", nargs="*", metavar="KATA",
                        help="katas to run (default: every kata of the set)")
    parser.add_argument("--best-of", type=int, default=1, metavar="N",
                        help="one-shot answers per kata: the first at temperature 0, the "
                             f"others sampled at {SAMPLE_TEMPERATURE} (default 1)")
    parser.add_argument("--sides", nargs="*", default=list(SIDES), choices=SIDES)
    parser.add_argument("--runs", type=int, default=1, help="rounds over the katas")
    parser.add_argument("--limit", type=float, default=900,
                        help="seconds one run (or the baseline's request) may take")
    parser.add_argument("--max-tokens", type=int, default=3000,
                        help="the baseline's max_tokens (default 3000, the stock coder's)")
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
    names = kata_names(args.katas)
    if not names:
        parser.error(f"--katas {args.katas}: no specs/*.md there")
    unknown = [n for n in args.specs or [] if n not in names]
    if unknown:
        parser.error(f"no kata {', '.join(unknown)} in {args.katas}; it has {', '.join(names)}")
    args.specs = args.specs or names
    if args.model and "baseline" in args.sides:
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
    for i in range(args.runs):
        for kata in (load_kata(name, args.katas) for name in args.specs):
            # alternate which side goes first, so neither always meets a warm server cache
            sides = args.sides if i % 2 == 0 else list(reversed(args.sides))
            for side in sides:
                row = measure(kata, side, args.model, limit=args.limit,
                              max_tokens=args.max_tokens, keep=args.keep,
                              best_of=args.best_of)
                row.update(run=i, label=args.label)
                rows.append(row)
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), file=sys.stderr, flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
