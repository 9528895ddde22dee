"""Running a summary as a journaled step (so resume replays it, never recomputes it)."""

from __future__ import annotations

from orchestra._log import get_logger
from orchestra._types import CompactionRecord, Message
from orchestra.compaction import SummaryRequest, summary_part, summary_prompt
from orchestra.models.base import Model, ModelRequest, ModelSettings
from orchestra.models.prices import Pricer
from orchestra.runtime import keys
from orchestra.runtime.agent_state import AgentState
from orchestra.runtime.context_fit import MARGIN
from orchestra.runtime.journal import Journal, Outcome, usage_record
from orchestra.store.protocol import Writes
from orchestra.tokens import count_tokens
from orchestra.tracing import step_span

_SYSTEM = "You write faithful, compact summaries."
log = get_logger("orchestra.runtime")


async def summarize(journal: Journal, model: Model, agent: AgentState, request: SummaryRequest,
                    settings: ModelSettings, pricer: Pricer | None = None,
                    context: int | None = None) -> CompactionRecord:
    """Ask the agent's model for a summary of ``request.messages``; record what it covers.

    With the model's ``context`` known, only the oldest messages whose request fits it
    are summarized (:func:`summary_part`): the record says so, and the policy asks
    for the rest next."""
    if context is not None:
        room = int((context - request.max_tokens) / MARGIN) - count_tokens(_SYSTEM) - 8
        request = summary_part(request, room)
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
                (Message("system", _SYSTEM),
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
    log.debug("compacted", run=journal.task.run_id, task=journal.task.id,
              agent=agent.agent_id, messages=len(request.messages), last=int(out["last"]))
    return CompactionRecord(agent.agent_id, int(out["first"]), int(out["last"]),
                            str(out["summary"]), task_id=journal.task.id, step=n)
