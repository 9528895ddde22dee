"""`orchestra demo` end to end, through the real CLI in a child process."""

from __future__ import annotations

import json
import subprocess
import sys

from e2e_helpers import (
    Reference,
    board,
    child_env,
    cli,
    event_seqs_gap_free,
    events,
    query,
    step_rows,
)

MODULES = ["textkit/slugify.py", "textkit/wrap.py", "textkit/stats.py"]


def test_demo_exits_0_and_says_so(reference: Reference) -> None:
    out = reference.result.stdout
    assert "SCRIPTED model session" in out  # the demo is honest about its model
    assert f"run {reference.run_id}: completed" in out
    assert "reissued after crashes 0" in out
    assert "Traceback" not in reference.result.stderr
    # the shipped session matches the pipeline (tests/agents/test_demo_session.py)
    assert "not in the recording" not in reference.result.stderr


def test_demo_costs_0_and_says_why(reference: Reference) -> None:
    out = reference.result.stdout
    usage = next(line for line in out.splitlines() if line.startswith("  cost "))
    assert usage.startswith("  cost $0  calls ") and "cached input 0" in usage
    # a scripted session bills nothing: said once, in the summary, never as a warning
    assert out.count("local model: cost not counted (demo)") == 1
    assert "no price" not in out + reference.result.stderr
    (cost, tokens), = query(reference.db, "SELECT cost, tokens_in + tokens_out FROM runs")
    assert cost == 0.0 and tokens > 0


def test_demo_summary_tells_what_was_built_caught_and_fixed(reference: Reference) -> None:
    out = reference.result.stdout
    assert "modules built: " + ", ".join(MODULES) in out
    assert "textkit/wrap.py (round 1)" in out and "textkit/slugify.py (round 1)" in out
    assert ("its own tests caught in textkit/wrap.py (round 1): FAILED tests/test_wrap.py::"
            in out)
    assert "  fixed: Counted the joining space" in out


def test_demo_workspace_tests_really_pass(reference: Reference) -> None:
    # the package's __init__.py too: empty, written where the workspace had none
    assert sorted(reference.files) == sorted(
        [*MODULES, "textkit/__init__.py", "tests/test_slugify.py", "tests/test_wrap.py",
         "tests/test_stats.py"])
    assert reference.files["textkit/__init__.py"] == b""
    env = {**child_env(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # plain pytest: fast
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                          cwd=reference.workspace, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " passed" in proc.stdout and "failed" not in proc.stdout


def test_demo_board_holds_plan_handoffs_decisions_and_approvals(reference: Reference) -> None:
    res = cli("board", reference.run_id, "--db", reference.db, "--json")
    assert res.code == 0, res
    data = json.loads(res.stdout)
    assert set(data) == {"plans", "handoffs", "notes", "approvals", "entries"}
    # what each task finished, as typed entries (agents.entries): a role added to the
    # stock pipeline consumes them
    made = sorted((e["type"], e["author"].rsplit("/", 1)[-1],
                   e["body"].get("module") or e["body"]["path"]) for e in data["entries"])
    assert made == sorted([("TestsWritten", "tester", m) for m in MODULES]
                          + [("ModuleReviewed", "reviewer", m) for m in MODULES]
                          + [("ModuleWritten", "reviewer", m) for m in MODULES])
    assert all(e["body"]["accepted"] for e in data["entries"] if e["type"] == "ModuleWritten")

    # the plan: 3 modules, each with its test file
    assert len(data["plans"]) == 1
    plan = data["plans"][0]
    assert plan["version"] == 1 and plan["author"].endswith("/architect")
    assert [m["path"] for m in plan["body"]["modules"]] == MODULES
    assert all(m["test_path"].startswith("tests/test_") for m in plan["body"]["modules"])

    # handoffs: plan -> 3 testers; each module's tests -> its coder; its code -> review
    flows = sorted((h["from_agent"].rsplit("/", 1)[-1], h["to_role"],
                    h["payload"]["module"]["path"], h["payload"]["round"])
                   for h in data["handoffs"])
    assert flows == sorted(
        [("architect", "tester", m, 1) for m in MODULES]
        + [("tester", "coder", m, 1) for m in MODULES]
        + [("coder", "reviewer", m, 1) for m in MODULES])
    task_ids = [h["task_id"] for h in data["handoffs"]]
    assert len(set(task_ids)) == len(task_ids), "each handoff created its own task"

    # notes: the architect's decisions (with reasons) and one approval per module
    notes = data["notes"]
    decisions = [n for n in notes if "decision" in n["tags"]]
    assert len(decisions) == len(plan["body"]["decisions"]) == 3
    assert all(" because " in n["body"] and n["author"].endswith("/architect")
               for n in decisions)
    approvals = {n["tags"][1]: n["body"] for n in notes if "approval" in n["tags"]}
    assert set(approvals) == set(MODULES)
    assert approvals["textkit/wrap.py"] == "approved textkit/wrap.py in round 1"
    assert approvals["textkit/slugify.py"].endswith("round 1")
    assert approvals["textkit/stats.py"].endswith("round 1")
    assert data["approvals"] == []

    # the CLI shows what is stored
    assert board(reference.db, reference.run_id) == reference.board


def test_demo_wrap_was_fixed_because_its_real_tests_failed(reference: Reference) -> None:
    """The coder's first wrap is buggy: its task runs the tester's tests for real, asks
    for a new sample told what failed, and the second answer passes; the reviewer gets
    the passing report and the history."""
    db, run_id = reference.db, reference.run_id
    (coder_id,) = [tid for tid, i in query(
        db, "SELECT id, input FROM tasks WHERE run_id = ? AND role = 'coder'", (run_id,))
        if json.loads(i)["module"]["path"] == "textkit/wrap.py"]
    checks = [json.loads(o) for (o,) in query(
        db, "SELECT output FROM steps WHERE task_id = ? AND name = 'check_output' "
            "AND status = 'completed' ORDER BY step", (coder_id,))]
    assert len(checks) == 2
    rejected, accepted = checks
    failed_names = {"test_word_that_would_overflow_by_one_moves_to_next_line",
                    "test_no_line_exceeds_width"}
    assert any(name in rejected["problem"] for name in failed_names)  # the first failure
    assert rejected.get("fresh") is True
    assert rejected["data"]["score"][0] < rejected["data"]["score"][1]
    assert accepted["problem"] == "" and accepted["output"]["report"]["passed"] is True
    # the model was asked for a new sample, told what failed
    feedback = query(db, "SELECT content FROM messages WHERE task_id = ? AND role = 'user' "
                         "AND name = 'feedback'", (coder_id,))
    assert len(feedback) == 1 and "again from the start" in feedback[0][0]
    assert "test_word_that_would_overflow_by_one_moves_to_next_line" in feedback[0][0]
    (review,) = [json.loads(i) for (i,) in query(
        db, "SELECT input FROM tasks WHERE run_id = ? AND role = 'reviewer'", (run_id,))
        if json.loads(i)["module"]["path"] == "textkit/wrap.py"]
    assert review["report"]["passed"] is True and len(review["history"]) == 1
    kinds = [(k, d.get("module")) for _, k, d in events(db, run_id) if k.startswith("module.")]
    assert sorted(kinds) == sorted(("module.approved", m) for m in MODULES)


def test_demo_show_reports_status_tasks_agents_and_steps(reference: Reference) -> None:
    db, run_id = reference.db, reference.run_id
    res = cli("show", run_id, "--db", db, "--json")
    assert res.code == 0, res
    data = json.loads(res.stdout)
    assert data["status"] == "completed" == data["run"]["status"]
    assert data["run"]["error"] is None
    assert data["tasks"] == {"completed": 10}  # 1 plan, 3 tests, 3 modules, 3 reviews
    steps = data["steps"]
    journal = step_rows(db, run_id)
    assert steps["completed"] == len(journal) == data["run"]["steps"] > 0
    assert steps["reissued"] == 0 and steps["started"] == 0 and steps["failed"] == 0
    assert all(status == "completed" and attempts == 1 for *_, status, attempts in journal)

    agents = {a["role"]: a for a in data["agents"]}
    assert set(agents) == {"architect", "tester", "coder", "reviewer"}
    assert sum(a["steps_completed"] for a in agents.values()) == steps["completed"]
    assert sum(a["tokens_in"] + a["tokens_out"] for a in agents.values()) == \
        data["run"]["tokens_in"] + data["run"]["tokens_out"] > 0
    for role, a in agents.items():
        assert a["agent_id"] == f"{run_id}/{role}"
        assert a["steps_completed"] > 0 and a["steps_reissued"] == 0
        assert a["tokens_in"] > 0 and a["tokens_out"] > 0 and a["messages"] > 0
        point = a["restart_point"]
        assert point is not None
        # the restart point is the agent's last completed step
        last = query(db, "SELECT s.task_id, s.step FROM steps s JOIN tasks t ON t.id = "
                         "s.task_id WHERE t.run_id = ? AND t.role = ? AND s.status = "
                         "'completed' ORDER BY s.finished_at DESC LIMIT 1", (run_id, role))
        assert (point["task"], point["step"]) == last[0]
    assert data["approvals_pending"] == []

    text = cli("show", run_id, "--db", db)
    assert text.code == 0 and f"run {run_id}  completed" in text.stdout
    assert "restart point: task" in text.stdout
    event_seqs_gap_free(db, run_id)
