"""A research team on a blackboard: no role names another, each acts on what is posted.

A planner posts questions; researchers (three at once) take each open question as it
appears; a critic reviews every finding, and a rejected one goes back to a researcher;
a writer acts once every question has an accepted finding. No route is written
between them: each role declares what it consumes (``consumes = [On(...)]``), and the
coordinator gives it a task for each entry, once, in the transaction that posts the
entry. The critic's notes to itself are private: no other role ever sees them.

Runs offline with a FunctionModel standing in for a real model:

    python examples/research_board.py                 # start (or finish) the run
    python examples/research_board.py --model openai:gpt-4.1-mini   # a real model

Kill it at any moment (Ctrl-C, kill -9) and run it again: it resumes the same run,
and no entry is lost or acted on twice.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from orchestra import (
    PRIVATE,
    BoardView,
    Coordinator,
    FunctionModel,
    ModelRequest,
    NewTask,
    On,
    Pipeline,
    Role,
    SQLiteBlackboard,
    Task,
    ToolContext,
    When,
    entry,
    load_model,
    tool,
)
from orchestra.store import Writes


class Topic(BaseModel):
    subject: str
    questions: int = 3


class Plan(BaseModel):
    questions: list[str]


class Question(BaseModel):
    id: str
    text: str
    advice: str = ""


class Finding(BaseModel):
    question_id: str
    question: str
    answer: str


class Review(BaseModel):
    question_id: str
    question: str
    accepted: bool
    advice: str = ""


class Brief(BaseModel):
    findings: list[Finding]


class Report(BaseModel):
    text: str


class Planner(Role[Topic, Plan]):
    """You split a research topic into as many short questions as asked. Reply with JSON:
    {"questions": ["...", ...]}."""


class Researcher(Role[Question, Finding]):
    """You answer one research question in two sentences. Reply with JSON:
    {"question_id": "...", "question": "...", "answer": "..."}; follow any advice."""

    consumes = [On(Question),
                On(Review, where=lambda r: not r.accepted,
                   input=lambda r: Question(id=r.question_id, text=r.question, advice=r.advice))]
    posts_output = True
    concurrency = 3  # several researchers take open questions at once


class Critic(Role[Finding, Review]):
    """You review a finding: accept it only if it answers its question concretely. Reply
    with JSON: {"question_id": "...", "question": "...", "accepted": true|false,
    "advice": "..."}."""

    consumes = [On(Finding)]
    posts_output = True

    @tool
    async def remember(self, ctx: ToolContext, thought: str) -> str:
        """Keep a private thought about a finding (no other role ever sees it)."""
        ctx.post(Thought(text=thought), scope=PRIVATE)
        return "noted"


class Thought(BaseModel):
    text: str


def all_answered(board: BoardView) -> bool:
    """Every question has a finding the critic accepted."""
    questions = {q.id for q in board.of(Question)}
    accepted = {r.question_id for r in board.of(Review) if r.accepted}
    return bool(questions) and questions <= accepted


def brief(board: BoardView) -> Brief:
    """The latest finding of each question, in the order the questions were posted."""
    latest = {f.question_id: f for f in board.of(Finding)}
    return Brief(findings=[latest[q.id] for q in board.of(Question) if q.id in latest])


class Writer(Role[Brief, Report]):
    """You write a short report from accepted findings. Reply with JSON: {"text": "..."}."""

    consumes = [When("answered", all_answered, input=brief)]
    posts_output = True


def post_questions(plan: Plan, task: Task, writes: Writes) -> None:
    """The planner's route: each question becomes an entry (routes compose with
    subscriptions: the researchers' ``On(Question)`` does the rest)."""
    for i, text in enumerate(plan.questions, 1):
        writes.entries.append(entry(Question(id=f"q{i}", text=text)))


def offline_model(request: ModelRequest) -> str:
    """Plays every role; the critic rejects the first answer to the second question."""
    system, last = request.messages[0].content, request.messages[-1]
    if system.startswith("You split"):
        topic = json.loads(last.content)
        asks = ["What is {}?", "Why does {} matter?", "Who works on {}?", "Where is {} used?"]
        return json.dumps({"questions": [asks[i % 4].format(topic["subject"]) + "?" * (i // 4)
                                         for i in range(topic["questions"])]})
    if system.startswith("You answer"):
        q = json.loads(last.content)
        answer = f"A concrete answer to {q['text']!r}." + (" Revised." if q["advice"] else "")
        return json.dumps({"question_id": q["id"], "question": q["text"], "answer": answer})
    if system.startswith("You review"):
        if last.role == "tool":  # the private thought is kept; now the verdict
            f = json.loads(next(m.content for m in reversed(request.messages)
                                if m.role == "user"))
            ok = f["question_id"] != "q2" or "Revised" in f["answer"]
            return json.dumps({"question_id": f["question_id"], "question": f["question"],
                               "accepted": ok, "advice": "" if ok else "be more concrete"})
        f = json.loads(last.content)
        return json.dumps({"name": "remember", "arguments": {
            "thought": f"critic-private: {f['question_id']} looks {len(f['answer'])} long"}})
    findings = json.loads(last.content)["findings"]
    return json.dumps({"text": " ".join(f["answer"] for f in findings)})


def build(run_input: Any) -> Pipeline:
    return Pipeline("research-board", roles=[Planner(), Researcher(), Critic(), Writer()],
                    start=lambda inp: [NewTask("planner", inp, key="plan")],
                    routes={Planner: post_questions},
                    done=lambda board: bool(board.of(Report)),
                    model=FunctionModel(offline_model), ref="examples.research_board:build")


async def main(db: Path, model_spec: str | None, subject: str) -> None:
    store = await SQLiteBlackboard.open(db)
    try:
        models = {}
        if model_spec:  # one model for every role: its concurrency gate queues them all
            model = load_model(model_spec)  # (a one-slot local server answers one at a time)
            models = {role.name: model for role in build({}).roles}
        coordinator = Coordinator(store, build({}), models=models)
        active = [r for r in await store.list_runs(active_only=True)
                  if r.pipeline.endswith("research_board:build")]
        run = await (coordinator.resume(active[0].id) if active
                     else coordinator.run({"subject": subject}))
        print(f"run {run.id}: {run.status}")
        for e in await store.get_entries(run.id):
            print(f"  {e.type:<8} by {e.author_role:<10} [{e.scope}] {json.dumps(e.body)[:70]}")
    finally:
        await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("research_board.db"))
    parser.add_argument("--model", help="a model spec, e.g. openai:gpt-4.1-mini")
    parser.add_argument("--subject", default="durable agents")
    args = parser.parse_args()
    asyncio.run(main(args.db, args.model, args.subject))
