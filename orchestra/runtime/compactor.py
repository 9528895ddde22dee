"""Running a summary as a journaled step (so resume replays it, never recomputes it)."""

from __future__ import annotations

from orchestra._types import CompactionRecord, Message
from orchestra.compaction import SummaryRequest, summary_prompt
from orchestra.models.base import Model, ModelRequest, ModelSettings
from orchestra.models.prices import Pricer
from orchestra.runtime import keys
from orchestra.runtime.agent_state import AgentState
from orchestra.runtime.journal import Journal, Outcome, usage_record
from orchestra.store.protocol import Writes
from orchestra.tracing import step_span


async def summarize(journal: Journal, model: Model, agent: AgentState, request: SummaryRequest,
                    settings: ModelSettings, pricer: Pricer | None = None) -> CompactionRecord:
    """Ask the agent's model for a summary of ``request.messages``; record what it covers."""
    first = request.previous.first_seq if request.previous else request.messages[0].seq
    last = request.messages[-1].seq
    prompt = summary_prompt(request)
    n = journal.reserve()
    limit = request.max_tokens * 4

    async def call() -> Outcome:
        with step_span("compaction", "summarize", **{"orchestra.step": n,
                                                      "orchestra.compaction.first": first,
                                                      "orchestra.compaction.last": last}):
            resp = await model.request(ModelRequest(
                (Message("system", "You write faithful, compact summaries."),
                 Message("user", prompt)),
                settings=settings))
        text = resp.text.strip()[:limit] or "(the model returned an empty summary)"
        record = CompactionRecord(agent.agent_id, first, last, text,
                                  task_id=journal.task.id, step=n)
        usage = resp.usage if pricer is None else pricer.priced(model.name, resp.usage)
        return Outcome({"summary": text, "first": first, "last": last, "usage":
                        usage_record(usage), "cost": usage.cost},
                       usage.input_tokens, usage.output_tokens, usage.cost,
                       Writes(compactions=[record]))

    digest = f"{first}-{last}:{keys.digest(prompt)}"
    out = await journal.run(n, "compaction", "summarize", digest, call)
    return CompactionRecord(agent.agent_id, int(out["first"]), int(out["last"]),
                            str(out["summary"]), task_id=journal.task.id, step=n)
