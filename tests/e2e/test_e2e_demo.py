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


def test_demo_summary_tells_what_was_built_caught_and_fixed(reference: Reference) -> None:
    out = reference.result.stdout
    assert "modules built: " + ", ".join(MODULES) in out
    assert "textkit/wrap.py (round 2)" in out and "textkit/slugify.py (round 1)" in out
    assert "the reviewer caught in textkit/wrap.py (round 1): " in out
    assert "  fixed in round 2: " in out


def test_demo_workspace_tests_really_pass(reference: Reference) -> None:
    assert sorted(reference.files) == sorted(
        [*MODULES, "textkit/__init__.py", "tests/test_slugify.py", "tests/test_wrap.py",
         "tests/test_stats.py"])
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
    assert set(data) == {"plans", "handoffs", "notes", "approvals"}

    # the plan: 3 modules, each with its test file
    assert len(data["plans"]) == 1
    plan = data["plans"][0]
    assert plan["version"] == 1 and plan["author"].endswith("/architect")
    assert [m["path"] for m in plan["body"]["modules"]] == MODULES
    assert all(m["test_path"].startswith("tests/test_") for m in plan["body"]["modules"])

    # handoffs: plan -> 3 coders; each coder round -> reviewer; 1 rejection -> coder
    flows = sorted((h["from_agent"].rsplit("/", 1)[-1], h["to_role"],
                    h["payload"]["module"]["path"], h["payload"]["round"])
                   for h in data["handoffs"])
    assert flows == sorted(
        [("architect", "coder", m, 1) for m in MODULES]
        + [("coder", "reviewer", m, 1) for m in MODULES]
        + [("reviewer", "coder", "textkit/wrap.py", 2),
           ("coder", "reviewer", "textkit/wrap.py", 2)])
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
    assert approvals["textkit/wrap.py"] == "approved textkit/wrap.py in round 2"
    assert approvals["textkit/slugify.py"].endswith("round 1")
    assert approvals["textkit/stats.py"].endswith("round 1")
    assert data["approvals"] == []

    # the CLI shows what is stored
    assert board(reference.db, reference.run_id) == reference.board


def test_demo_wrap_needed_two_rounds_because_a_real_test_failed(reference: Reference) -> None:
    """Round 1 of wrap is buggy: the reviewer's real pytest run fails, its review cites the
    failing tests, and the coder's round 2 fixes them."""
    db, run_id = reference.db, reference.run_id
    reviews = query(db, "SELECT id, input, result FROM tasks WHERE run_id = ? AND role = "
                        "'reviewer' ORDER BY created_at", (run_id,))
    wrap = [(tid, json.loads(i), json.loads(r)) for tid, i, r in reviews
            if json.loads(i)["module"]["path"] == "textkit/wrap.py"]
    assert [(i["round"], r["approved"]) for _, i, r in wrap] == [(1, False), (2, True)]
    (first_id, _, rejected), (second_id, _, _) = wrap

    def test_run(task_id: str) -> dict[str, object]:
        rows = query(db, "SELECT output FROM steps WHERE task_id = ? AND name = 'run_tests' "
                         "AND status = 'completed'", (task_id,))
        assert len(rows) == 1
        recorded = json.loads(rows[0][0])  # a tool step records {"content", "is_error"}
        assert recorded["is_error"] is False
        report: dict[str, object] = json.loads(recorded["content"])
        return report

    failing = test_run(first_id)
    assert failing["passed"] is False and failing["tests_failed"] == 2
    failed_names = {"test_word_that_would_overflow_by_one_moves_to_next_line",
                    "test_no_line_exceeds_width"}
    for name in failed_names:
        assert name in str(failing["output"])
        assert any(name in c for c in rejected["comments"]), "the review cites the failing test"
    assert test_run(second_id)["passed"] is True

    # the comments went back to the coder with the round-2 task
    (redo,) = [json.loads(i) for (i,) in query(
        db, "SELECT input FROM tasks WHERE run_id = ? AND role = 'coder'", (run_id,))
        if json.loads(i)["round"] == 2]
    assert redo["comments"] == rejected["comments"]
    kinds = [(k, d.get("module")) for _, k, d in events(db, run_id) if k.startswith("module.")]
    assert sorted(kinds) == sorted(("module.approved", m) for m in MODULES)


def test_demo_show_reports_status_tasks_agents_and_steps(reference: Reference) -> None:
    db, run_id = reference.db, reference.run_id
    res = cli("show", run_id, "--db", db, "--json")
    assert res.code == 0, res
    data = json.loads(res.stdout)
    assert data["status"] == "completed" == data["run"]["status"]
    assert data["run"]["error"] is None
    assert data["tasks"] == {"completed": 9}  # 1 plan, 4 coder rounds, 4 reviews
    steps = data["steps"]
    journal = step_rows(db, run_id)
    assert steps["completed"] == len(journal) == data["run"]["steps"] > 0
    assert steps["reissued"] == 0 and steps["started"] == 0 and steps["failed"] == 0
    assert all(status == "completed" and attempts == 1 for *_, status, attempts in journal)

    agents = {a["role"]: a for a in data["agents"]}
    assert set(agents) == {"architect", "coder", "reviewer"}
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
