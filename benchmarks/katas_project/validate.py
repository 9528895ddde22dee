"""Check the project set against itself: its hidden tests on the reference, on stubs and
on near misses of the reference.

    python -m benchmarks.katas_project.validate              # reference, stubs, near misses
    python -m benchmarks.katas_project.validate --impl DIR   # any directory holding tally/

Each implementation is copied into a temporary workspace and scored as a run's workspace
is (``benchmarks.katas.score_hidden``). The reference must pass every hidden test and
collect the count ``hidden/COUNTS`` gives; modules whose every name is None must fail
every test; each near miss (one edit of the reference, :data:`NEAR_MISSES`) must fail at
least one. Exits 0 only then.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks.katas import Kata, hidden_total, kata_names, load_kata, score_hidden

SET_DIR = Path(__file__).resolve().parent
REFERENCE_DIR = SET_DIR / "reference"
STUB = "def __getattr__(name):\n    return None\n"
NEAR_MISSES: dict[str, tuple[str, str, str]] = {
    "no thousands separator": ("tally/money.py", "{whole:,}", "{whole}"),
    "tax rounded half to even": ("tally/tax.py", "(amount_cents * rate * 2 + 100) // 200",
                                 "round(amount_cents * rate / 100)"),
    "percent discount rounded to nearest": ("tally/discounts.py", "cents * value // 100",
                                            "round(cents * value / 100)"),
    "blank lines not counted": ("tally/parse.py", "enumerate(text.splitlines(), start=1)",
                                "enumerate([x for x in text.splitlines() if x.strip()], 1)"),
    "discount line always shown": ("tally/render.py", "if invoice.code is not None:",
                                   "if True:"),
}
"""name: (module, text of the reference, what replaces it)"""


def expected_counts() -> dict[str, int]:
    pairs = (line.split() for line in (SET_DIR / "hidden" / "COUNTS").read_text().splitlines()
             if line.strip())
    return {name: int(count) for name, count in pairs}


def _files(kata: Kata, impl: Path | None) -> dict[str, str]:
    """The modules of ``kata`` in ``impl`` (None: stubs), by path, ``__init__`` included."""
    paths = [*kata.modules, *(f"{m.rsplit('/', 1)[0]}/__init__.py" for m in kata.modules
                              if "/" in m)]
    if impl is None:
        return {p: "" if p.endswith("__init__.py") else STUB for p in paths}
    return {p: (impl / p).read_text() for p in dict.fromkeys(paths) if (impl / p).is_file()}


def score(kata: Kata, files: dict[str, str]) -> tuple[int, int]:
    """(passed, total) of the kata's hidden tests on a workspace holding ``files``."""
    with tempfile.TemporaryDirectory(prefix="project-validate-") as tmp:
        workspace = Path(tmp)
        for path, text in files.items():
            (workspace / path).parent.mkdir(parents=True, exist_ok=True)
            (workspace / path).write_text(text)
        return score_hidden(kata, workspace, plugins=False)


def near_miss(files: dict[str, str], name: str) -> dict[str, str]:
    """The reference with one near miss's edit (which must apply exactly once)."""
    module, old, new = NEAR_MISSES[name]
    if files[module].count(old) != 1:
        raise ValueError(f"near miss {name!r}: {old!r} is not in {module} exactly once; "
                         "update NEAR_MISSES to the reference")
    return {**files, module: files[module].replace(old, new)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--impl", type=Path, help="score this directory only")
    args = parser.parse_args(argv)
    ok = True
    report: dict[str, object] = {}
    for kata in (load_kata(name, SET_DIR) for name in kata_names(SET_DIR)):
        if args.impl:
            report[kata.name] = score(kata, _files(kata, args.impl))
            continue
        reference = _files(kata, REFERENCE_DIR)
        passed, total = score(kata, reference)
        stub = score(kata, _files(kata, None))
        misses = {name: score(kata, near_miss(reference, name))[0] for name in NEAR_MISSES}
        ok = (ok and passed == total == hidden_total(kata) == expected_counts()[kata.name]
              and stub[0] == 0 and all(p < total for p in misses.values()))
        report[kata.name] = {"reference": [passed, total], "stub": list(stub),
                             "near misses": misses}
    print(json.dumps(report, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
