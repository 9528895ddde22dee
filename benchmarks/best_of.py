"""The best of N for one-shot answers already measured: each row's N - 1 sampled answers,
drawn J at a time from a server with J slots, and the row written again with them.

Why: the best-of-N column of ``benchmarks.pipeline_quality`` samples one answer at a time
behind its greedy one; on HumanEval's 82 development problems that is ~4 h of a 1.5B model
on 2 cores. A llama.cpp server with 4 slots and a unified KV cache serves 4 concurrent
answers at ~1.8x the throughput of one. A sampled answer is scored on its own, so the slots
change which tokens are drawn (batched arithmetic) but no rule of the measure. The greedy
first answer is kept from the file as measured on the one-slot server, where llama.cpp's
greedy answer is reproducible: it is the one-shot column the pipeline is compared with.

    python -m benchmarks.best_of --rows benchmarks/results/humaneval-1.5b-v14.jsonl \\
        --humaneval 0-81 --best-of 5 --jobs 4 --out he-best.jsonl --label 1.5b \\
        --model openai-compatible:http://127.0.0.1:18767/v1#local
    python -m benchmarks.pipeline_quality --summary he-best.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks import humaneval
from benchmarks.katas import KATAS_DIR, kata_names, load_kata
from benchmarks.pipeline_quality import checkout_commit, read_rows, sample_one_shot


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rows", type=Path, required=True, metavar="FILE",
                        help="a results file whose one-shot rows are the greedy answers")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--katas", type=Path, default=KATAS_DIR, metavar="DIR",
                       help="the rows' kata set (default: benchmarks/katas)")
    which.add_argument("--humaneval", metavar="IDS",
                       help=f"the rows' HumanEval development problems (0-{humaneval.DEV_LAST})")
    parser.add_argument("--specs", nargs="*", metavar="KATA",
                        help="katas to sample (default: every kata of the set)")
    parser.add_argument("--best-of", type=int, default=5, metavar="N",
                        help="answers per row, the greedy one included (default 5)")
    parser.add_argument("--jobs", type=int, default=1, metavar="J",
                        help="answers asked at once: the server's slots (default 1)")
    parser.add_argument("--model", required=True, help="model spec of the sampling server")
    parser.add_argument("--out", type=Path, required=True, help="append the rows, sampled")
    parser.add_argument("--label", default="", help="the model's name in the table")
    parser.add_argument("--limit", type=float, default=900, help="seconds one answer may take")
    parser.add_argument("--max-tokens", type=int, default=3000, help="each answer's max_tokens")
    parser.add_argument("--keep", action="store_true", help="keep each answer's directory")
    args = parser.parse_args(argv)
    if args.best_of < 2 or args.jobs < 1:
        parser.error("--best-of must be at least 2 and --jobs at least 1")
    if not args.rows.is_file():
        parser.error(f"--rows {args.rows}: no such file")
    if args.humaneval:
        try:
            args.katas = humaneval.dev_set(args.humaneval)
        except humaneval.HumanEvalError as exc:
            parser.error(str(exc))
    return args


def greedy_rows(rows: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """The one-shot row of each kata of the set, the latest where there are several; a
    kata with none is an error, not a gap in the column."""
    latest = {r["spec"]: r for r in rows if r.get("side") == "one-shot"}
    missing = [n for n in names if n not in latest]
    if missing:
        raise SystemExit(f"no one-shot row for {', '.join(missing)}")
    return [latest[n] for n in names]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    names = args.specs or kata_names(args.katas)
    firsts = greedy_rows(read_rows(args.rows), names)
    katas = {name: load_kata(name, args.katas) for name in names}
    roots = {name: Path(tempfile.mkdtemp(prefix=f"best-{name}-")) for name in names}

    def draw(job: tuple[str, int]) -> list[int]:
        name, seed = job
        return sample_one_shot(katas[name], args.model, roots[name] / f"sample{seed}",
                               limit=args.limit, max_tokens=args.max_tokens, seed=seed)

    jobs = [(name, seed) for name in names for seed in range(1, args.best_of)]
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    commit = checkout_commit()
    with ThreadPoolExecutor(args.jobs) as pool:  # in order, so a row is written when done
        drawn = pool.map(draw, jobs)
        for first in firsts:
            samples = [next(drawn) for _ in range(1, args.best_of)]
            drawn_how = {"commit": commit, "started": started, "jobs": args.jobs,
                         "model": args.model, "label": args.label,
                         "load_average": round(os.getloadavg()[0], 2),
                         "dir": str(roots[first["spec"]]) if args.keep else None}
            row = {**first, "samples": [first["hidden"], *samples], "samples_drawn": drawn_how}
            with args.out.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(first["spec"], row["samples"], file=sys.stderr, flush=True)
            if not args.keep:
                shutil.rmtree(roots[first["spec"]], ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
