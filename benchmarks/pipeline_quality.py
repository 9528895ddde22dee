"""Does the stock pipeline beat the same model asked once? Hidden tests on the kata set.

For each kata (``benchmarks/katas``), interleaved and side by side: (a) the one-shot
baseline, one plain-text chat-completions request whose code blocks become the
modules (``benchmarks/one_shot.py``), and (b) ``orchestra run --spec S --workspace W
--model SPEC --db D`` as a user runs it, killed at ``--limit`` seconds
(``benchmarks/orchestra_run.py``). Then the kata's hidden tests run on each workspace.
One JSON line per side and run goes to ``--out``; ``--table`` prints the markdown table
of a results file: per kata and in total, hidden tests passed, wall time, tokens,
model calls, prompt tokens evaluated / reused by the server's cache, runs that ended
by themselves.

    python -m benchmarks.pipeline_quality --runs 3 --out quality.jsonl --label 1.5b \\
        --model openai-compatible:http://127.0.0.1:8080/v1#local
    python -m benchmarks.pipeline_quality --table quality.jsonl
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

from benchmarks.katas import Kata, kata_names, load_kata, score_hidden
from benchmarks.one_shot import endpoint, run_baseline
from benchmarks.orchestra_run import run_orchestra
from orchestra.errors import UserError
from orchestra.models.spec import parse_model_spec

SIDES = ("baseline", "orchestra")


def measure(kata: Kata, side: str, model: str, *, limit: float, max_tokens: int,
            keep: bool) -> dict[str, Any]:
    """One side's run on one kata, scored by the hidden tests."""
    root = Path(tempfile.mkdtemp(prefix=f"quality-{kata.name}-{side}-"))
    workspace = root / "ws"
    workspace.mkdir()
    if side == "baseline":
        row = run_baseline(kata, model, workspace, limit=limit, max_tokens=max_tokens)
    else:
        row = run_orchestra(kata, model, root, limit=limit)
    row = {"spec": kata.name, **row, "model": str(parse_model_spec(model)),
           "hidden": list(score_hidden(kata, workspace)),
           "wrote_every_module": all(m in row["files"] for m in kata.modules)}
    if keep:
        row["dir"] = str(root)
    else:
        shutil.rmtree(root, ignore_errors=True)
    return row


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
    parser.add_argument("--specs", nargs="*", default=kata_names(), choices=kata_names(),
                        metavar="KATA", help=f"katas to run (default all: "
                        f"{', '.join(kata_names())})")
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
    args = parser.parse_args(argv)
    if not args.table and not (args.model and args.out):
        parser.error("give --model and --out (or --table FILE)")
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
    rows: list[dict[str, Any]] = []
    for i in range(args.runs):
        for kata in map(load_kata, args.specs):
            # alternate which side goes first, so neither always meets a warm server cache
            sides = args.sides if i % 2 == 0 else list(reversed(args.sides))
            for side in sides:
                row = measure(kata, side, args.model, limit=args.limit,
                              max_tokens=args.max_tokens, keep=args.keep)
                row.update(run=i, label=args.label)
                rows.append(row)
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), file=sys.stderr, flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
