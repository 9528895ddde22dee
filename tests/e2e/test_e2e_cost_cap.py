"""--max-cost: a run pauses before the call that could cross its cap (exit 6), resumes
with a higher cap, survives a kill -9, and finishes with every call's cost counted once
and equal to what genai-prices' table gives by hand from the journaled tokens."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import genai_prices
from e2e_helpers import cli, kill_group, logs, only_run_id, poll, query, spawn

from tests.e2e.cost_pipeline import REF

TURNS = 6
CAP = 0.0015  # USD: a few calls of ~$0.0003 each fit, with their look-ahead


def _model_steps(db: Path) -> list[tuple[int, int, float, list[int], int]]:
    rows = query(db, "SELECT s.tokens_in, s.tokens_out, s.cost, s.output, s.attempts "
                     "FROM steps s JOIN tasks t ON t.id = s.task_id WHERE s.kind = 'model' "
                     "AND s.status = 'completed' ORDER BY s.retry, s.step")
    return [(i, o, c, json.loads(out)["usage"], a) for i, o, c, out, a in rows]


def _by_hand(tokens_in: int, tokens_out: int, cached: int) -> float:
    price = genai_prices.calc_price(genai_prices.Usage(input_tokens=1, output_tokens=1),
                                    "gpt-4.1-mini", provider_id="openai").model_price
    usd = ((tokens_in - cached) * price.input_mtok + cached * price.cache_read_mtok
           + tokens_out * price.output_mtok) / Decimal(1_000_000)
    return float(usd)


def test_cost_cap_pauses_before_the_crossing_call_and_resume_survives_kill_9(
        tmp_path: Path) -> None:
    db, calls = tmp_path / "cost.db", tmp_path / "calls.log"
    run_input = json.dumps({"turns": TURNS, "calls": str(calls)})
    first = cli("run", "--db", db, "--pipeline", REF, "--input", run_input,
                "--max-cost", str(CAP))
    assert first.code == 6, first
    assert "paused before the call" in first.stdout and "--max-cost" in first.stdout
    run_id = only_run_id(db)
    (cost, status), = query(db, "SELECT cost, status FROM runs")
    issued = calls.read_text().splitlines()
    steps = _model_steps(db)
    assert status == "paused" and 0 < cost <= CAP
    # paused *before* the call: every call issued so far is journaled, none went past the cap
    assert 1 <= len(steps) == len(issued) < TURNS + 1

    # resume with a higher cap, and cut the power in the middle of it
    child = spawn("resume", run_id, "--db", db, "--max-cost", "1", log=tmp_path / "resume")
    poll(lambda: len(calls.read_text().splitlines()) >= len(issued) + 2 or None,
         what="two more model calls", proc=child)
    kill_group(child)
    assert child.returncode == -9, logs(tmp_path / "resume")

    last = cli("resume", run_id, "--db", db)  # the raised cap was recorded with the run
    assert last.code == 0, last
    steps = _model_steps(db)
    issued = calls.read_text().splitlines()
    assert len(steps) == TURNS + 1  # each call counted once
    # the step in flight at the kill, if any, ran again (the journal counts it); its first
    # call reached the model only if the kill came after the call was sent
    reissued = sum(a - 1 for *_, a in steps)
    billed_twice = len(issued) - len(steps)
    assert reissued in (0, 1) and 0 <= billed_twice <= reissued
    for tokens_in, tokens_out, cost, usage, _ in steps:
        assert cost == _by_hand(tokens_in, tokens_out, usage[2]) > 0
    assert sum(usage[2] for *_, usage, _ in steps) > 0  # cached input was counted
    (total,), = query(db, "SELECT cost FROM runs")
    assert abs(total - sum(c for _, _, c, _, _ in steps)) < 1e-12

    shown = json.loads(cli("show", run_id, "--db", db, "--json").stdout)
    assert shown["usage"]["total"]["calls"] == TURNS + 1
    assert shown["usage"]["total"]["reissued"] == reissued
    assert abs(shown["usage"]["by_role"]["counter"]["cost"] - total) < 1e-12
    listed = cli("runs", "--db", db).stdout.splitlines()
    assert listed[0].split()[-1] == "COST" and listed[1].split()[-1] == f"${total:.6f}"

    # before another run: the models, their prices, and the median of the recorded runs
    dry = cli("run", "--db", db, "--pipeline", REF, "--input", run_input, "--dry-run")
    assert dry.code == 0, dry
    assert "openai:gpt-4.1-mini" in dry.stdout and "$0.4 in, $1.6 out" in dry.stdout
    assert f"ESTIMATE (median of its last 1 completed run(s), not a quote): ${total:.6f}" \
        in dry.stdout
    assert len(query(db, "SELECT id FROM runs")) == 1  # a dry run starts nothing
