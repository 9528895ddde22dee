"""One agent executing one task: context, model calls, tools, output, journal.

The loop is deterministic given the journal: on resume it re-enters from the top, every
completed step returns its recorded output, and the in-memory message list of the task is
rebuilt exactly as it was. Messages reach the store only inside step commits (the user
input and tool results travel with the next model step), so replay never appends twice.

The task's end is not committed here: :meth:`TaskRunner.run` returns it as data
(``outcomes``), and the caller commits a completed task's last step, messages and
postings with the task's completion (and its next claim) in one transaction.
"""

from __future__ import annotations

from typing import Any

from orchestra._errors import ModelBehaviorError, ModelRetry, UsageLimitExceeded
from orchestra._log import get_logger
from orchestra._types import Message, Task, ToolCallRecord
from orchestra.compaction import View
from orchestra.mcp.hub import MCPSetup
from orchestra.models.base import Model, ModelRequest, ModelSettings, ToolCall, streams
from orchestra.models.prices import Pricer
from orchestra.models.tape import tape_of
from orchestra.roles import Role
from orchestra.runtime import keys
from orchestra.runtime.agent_state import ATTEMPT_FAILED, AgentState
from orchestra.runtime.builtin_tools import builtin_tools
from orchestra.runtime.compactor import summarize
from orchestra.runtime.context_fit import ContextWindow
from orchestra.runtime.journal import Journal, Outcome, PendingStep
from orchestra.runtime.limits import RunLimits, Spent, call_bound, check_next_call, check_spent
from orchestra.runtime.mcp_tools import MCPTools, open_mcp_tools, schemas
from orchestra.runtime.outcomes import Completed, Counts, Failed, Limited, TaskOutcome, Waiting
from orchestra.runtime.patches import TaskPatches
from orchestra.runtime.replies import (
    OutputError,
    one_line,
    parse_output,
    recover_text_tool_calls,
    refuse_echo,
)
from orchestra.runtime.retry_sampling import retry_settings
from orchestra.runtime.tool_calls import ApprovalWait, ToolRunner
from orchestra.runtime.turns import MAX_REPLY_CHARS as MAX_REPLY_CHARS
from orchestra.runtime.turns import Turns, reply_outcome, serialize_output, system_message
from orchestra.store.protocol import Lease, TaskStore, Writes
from orchestra.store.views import ReadOnlyBoard
from orchestra.tools import EntryHook, HandoffCheck, Rejection, Tool, ToolContext

log = get_logger("orchestra.runtime")

FRESH_AFTER = 2  # unusable turns in a row after which the model sees its task afresh


class TaskRunner:
    """Runs ``task`` for ``role`` with ``model``; composes journal, tools and compaction."""

    def __init__(self, *, store: TaskStore, role: Role, model: Model, agent: AgentState,
                 task: Task, lease: Lease, limits: RunLimits | None = None,
                 settings: ModelSettings | None = None, pricer: Pricer | None = None,
                 check_handoff: HandoffCheck | None = None, mcp: MCPSetup | None = None,
                 on_entry: EntryHook | None = None) -> None:
        self.store, self.role, self.model, self.agent = store, role, model, agent
        self.task, self.lease = task, lease
        self.limits, self.settings = limits or RunLimits(), settings or ModelSettings()
        self.pricer = pricer  # prices each call when made (None: the cost the model reports)
        self.check_handoff = check_handoff  # the pipeline's check of a tool's handoffs
        self.on_entry = on_entry  # what a tool's entries trigger (the pipeline's matching)
        # what tools see of the store: the entries this role's scope admits
        self.board = ReadOnlyBoard(store, role.name, frozenset(type(role).labels))
        self.journal: Journal | None = None
        self.mcp = mcp
        self.mcp_tools: MCPTools | None = None  # the task's MCP tools: made at _begin
        self.tools: dict[str, Tool] = role.bound_tools() | (
            builtin_tools() if type(role).recall else {})
        self.tokens, self.cost = 0, 0.0
        self.checks_output = type(role).check_output is not Role.check_output
        self.patches = TaskPatches(role.name, type(role).patches, ())
        self.window = ContextWindow(model)  # learned at the first fit, narrowed by refusals

    async def run(self) -> TaskOutcome:
        """Run the task to its end, returned as data (nothing of a completed task's end
        is committed yet: see :class:`~orchestra.runtime.outcomes.Completed`)."""
        try:
            return await self._turns()
        except ApprovalWait as wait:
            return Waiting(wait.approval_id, wait.tool, self._counts())
        except UsageLimitExceeded as exc:
            return Limited(str(exc), self._counts())

    async def _turns(self) -> Completed | Failed:
        """Ask the model, run its tool calls or take its answer, until done or failed."""
        st = await self._begin()
        cls = type(self.role)
        for _turn in range(cls.max_turns):
            self._check_limits()
            record, reply, uncommitted = await self._model_step(st, await self._request(st))
            st.task_msgs.append(reply)
            problem, calls = self._reply_problem(record, reply.content, reply.tool_calls)
            if calls:
                await st.journal.commit(uncommitted)
                await self._run_tools(st, calls)
            else:
                outcome = await self._answer(st, record, problem, uncommitted)
                if outcome is not None:
                    return outcome
            if st.failures + len(st.rejections) > cls.output_retries:
                return self._fail(f"no usable answer after {st.failures + len(st.rejections)}"
                                  f" tries (output_retries={cls.output_retries}); the "
                                  f"last problem: {st.last_problem}", st.pending)
            if st.failures >= FRESH_AFTER:
                st.start_afresh()
        return self._fail(f"no final answer after max_turns={cls.max_turns} model calls "
                          f"(the model kept calling tools); raise max_turns or simplify "
                          f"the task", st.pending)

    async def _begin(self) -> Turns:
        """Load the agent's history and the task's journal (none at a first claim)."""
        cls = type(self.role)
        capped = cls.max_tokens_per_agent is not None or cls.max_cost_per_agent is not None
        await self.agent.refresh(self.store, with_compactions=cls.compaction.summarizes,
                                 with_totals=capped)
        recorded = (await self.store.get_steps(self.task.id, self.task.retries)
                    if self.task.attempt > 1 else [])
        journal = self.journal = Journal(self.store, self.task, self.lease,
                                         self.agent.agent_id, recorded,
                                         on_commit=self._on_commit,
                                         streams=streams(self.model))
        self.mcp_tools = await open_mcp_tools(
            self.mcp, self.role, self.tools, store=self.store, task=self.task, lease=self.lease,
            journal=journal, agent_id=self.agent.agent_id, tape=tape_of(self.model))
        self.settings = self.role.settings_for(self.task.input) or self.settings
        self.patches = TaskPatches(self.role.name, type(self.role).patches, recorded)
        pinned = Message("user", self.role.task_message(self.task.input), name="task",
                         task_id=self.task.id)  # name="task": replay keys can be task-local
        return Turns(journal=journal, task_id=self.task.id,
                     system=system_message(self.patches.prompt(self.role)), pinned=pinned,
                     schemas=tuple([t.schema() for t in self.tools.values()]
                                   + list(schemas(self.mcp_tools))),
                     output_schema=self.role.output_schema(),
                     task_msgs=[pinned], pending=[pinned],
                     sample=self.role.sample_message(self.task.input))

    def _tool_runner(self, st: Turns) -> ToolRunner:
        """The task's tool runner, made at its first tool call (most tasks make none)."""
        if st.tools is None:
            st.tools = ToolRunner(store=self.store, board=self.board, task=self.task,
                                  lease=self.lease, journal=st.journal,
                                  agent_id=self.agent.agent_id, tools=self.tools,
                                  default_timeout=type(self.role).tool_timeout,
                                  needs_approval=self.role.requires_approval,
                                  check_handoff=self.check_handoff, source=self.mcp_tools,
                                  on_entry=self.on_entry, patches=self.patches)
        return st.tools

    async def _request(self, st: Turns) -> ModelRequest:
        """What the model sees this turn: instructions, summary, and the view that fits."""
        if st.restart is None:
            view = await self._view(st.journal, st.task_msgs, st.pinned)
        else:  # the task input and the last problem only, no failed exchange
            view = View(st.afresh_view(st.restart))
        messages: tuple[Message, ...] = (st.system,)
        if view.summary is not None:
            messages += (Message("user", "Summary of your earlier work:\n"
                                 + view.summary.summary),)
        return ModelRequest(messages + await self.window.fit(
            view.messages, fixed=messages, tools=st.schemas, output=st.output_schema,
            settings=self.settings, pinned=view.messages[0] if st.restart else st.pinned),
            st.schemas, st.output_schema, retry_settings(
                # by the task's key when it has one: the same task of another run of the
                # pipeline samples alike, so a recorded session replays there too
                self.settings, task_id=self.task.key or self.task.id, retries=self.task.retries,
                failures=st.failures + len(st.rejections),
                sample=bool(st.rejections) and st.rejections[-1].fresh))

    async def _model_step(self, st: Turns, request: ModelRequest
                          ) -> tuple[dict[str, Any], Message, PendingStep | None]:
        """The model call as a journaled step (replayed if recorded), left uncommitted:
        it commits with what follows it. The messages pending so far travel with it.
        Returns the step's record, the reply as a message, and the uncommitted step."""
        n = st.journal.reserve()
        flushed = st.pending
        st.pending = []
        model, pricer = self.model, self.pricer
        if self._money_capped() and pricer is not None and not st.journal.is_recorded(n):
            check_next_call(self.limits, self._spent(), call_bound(
                pricer, model.name, request, self.window.context), run_id=self.task.run_id,
                agent=self.agent.agent_id, agent_cost_cap=type(self.role).max_cost_per_agent)

        async def call() -> Outcome:
            resp = await self.window.ask(st.journal.ask, request, n)  # streamed: deltas logged
            usage = resp.usage if pricer is None else pricer.priced(model.name, resp.usage)
            outcome = reply_outcome(resp, flushed, usage)
            if n == 1:  # the patches the task runs with, journaled with its first call
                self.patches.record(outcome.output)
            return outcome

        digest = f"{len(request.messages)}:{keys.digest(request.messages[-1].content)}"
        record, uncommitted = await st.journal.run_deferred(n, "model", "model", digest, call,
                                                            wait_start=False)
        usage = record.get("usage", [0, 0])
        self.tokens += usage[0] + usage[1]
        self.cost += float(record.get("cost", 0.0))
        if uncommitted is not None and uncommitted.writes is not None:
            reply = uncommitted.writes.messages[-1]  # reply_outcome stores the reply last
        else:  # replayed: the reply as recorded
            reply = Message("assistant", record["text"],
                            tuple(ToolCallRecord(*c) for c in record["calls"]))
        return record, reply, uncommitted

    def _reply_problem(self, record: dict[str, Any], text: str, calls: tuple[ToolCall, ...]
                       ) -> tuple[str, tuple[ToolCall, ...]]:
        """What is wrong with the reply ('' if nothing), and the tool calls to run
        (including calls recovered from a reply that wrote them as text)."""
        if record.get("arguments_cut"):
            sizes = ", ".join(f"{name} ({n} characters)" for name, n in record["arguments_cut"])
            return (f"Your tool calls' arguments were far too long: {sizes}; the limit "
                    f"is {MAX_REPLY_CHARS} in all. The calls were not run. Send less "
                    "per call (e.g. write a large file in several parts).", calls)
        if record.get("cut") and not calls:
            return (f"Your reply was far too long ({record['cut']} characters; the "
                    f"limit is {MAX_REPLY_CHARS}). Answer briefly.", calls)
        if not calls and text:
            recovered = recover_text_tool_calls(text, [*self.tools, *(
                self.mcp_tools.tools if self.mcp_tools is not None else ())])
            if isinstance(recovered, str):
                return recovered, calls
            if recovered:
                return "", tuple(recovered)
        return "", calls

    async def _run_tools(self, st: Turns, calls: tuple[ToolCall, ...]) -> None:
        """Run the turn's tool calls; a turn that learned nothing new counts as a failure."""
        results = await self._tool_runner(st).run_all(calls)
        for r in results:
            msg = Message("tool", r.content, tool_call_id=r.call.id, name=r.call.name,
                          task_id=self.task.id)
            st.task_msgs.append(msg)
            st.pending.append(msg)
        fresh_results = [r for r in results if not r.is_error and (
            r.call.name, r.call.arguments, r.content) not in st.done]
        st.done.update((r.call.name, r.call.arguments, r.content) for r in results)
        if fresh_results:
            st.failures = 0
            return
        st.failures += 1
        if any(not r.is_error for r in results):  # a call repeated to no effect
            st.last_problem = (f"you repeated the call {results[-1].call.name} with the "
                               "same arguments and got the same result")
            if st.failures < FRESH_AFTER:
                st.say("You already made that call, with the same result. Do not repeat "
                       "it: take the next step of your task, or give your final answer.")
        else:
            st.last_problem = one_line(f"{results[-1].call.name}: {results[-1].content}")

    async def _answer(self, st: Turns, record: dict[str, Any], problem: str,
                      uncommitted: PendingStep | None) -> Completed | None:
        """A reply without tool calls: complete the task with it if usable (and checked);
        else say what is wrong. An unusable reply is a failure (a few in a row, a loop or
        an echo start the task afresh); a usable answer the check sends back is a
        rejection: the model sees why in full, the exchange stays in view."""
        brief, afresh = "", record["finish"] == "length"  # a loop, likely: out of view
        if not problem:
            try:
                refuse_echo(record["text"], st.pinned.content)
                result = self._final(record["text"], afresh)
            except OutputError as exc:
                problem, brief, afresh = str(exc), exc.brief, afresh or exc.afresh
            else:
                if not self.checks_output:  # the model step commits with the task
                    return self._complete(result, st.pending, uncommitted)
                await st.journal.commit(uncommitted)
                uncommitted = None
                rejection, accepted = await self._check(st, result)
                if rejection is None:
                    return self._complete(accepted, st.pending, None)
                st.rejections.append(rejection)
                st.failures = 0
                st.last_problem = one_line(rejection.problem) or "a new sample was asked"
                if rejection.fresh:  # a new sample asked for: the task and the message
                    st.rejected.add(record["text"])
                    st.sample_afresh(rejection.problem)
                elif record["text"] in st.rejected:  # the same answer again: in view, the
                    st.last_problem = f"you sent the same answer again ({st.last_problem})"
                    st.start_afresh()  # exchange would only bring it back once more
                else:
                    st.rejected.add(record["text"])
                    st.say(rejection.problem)
                return None
        await st.journal.commit(uncommitted)
        st.failures += 1
        st.last_problem = brief or one_line(problem)
        if afresh:  # shown a loop or an echo, a model copies it: ask anew
            st.start_afresh(problem)
        elif st.failures < FRESH_AFTER:
            st.say(problem)
        return None

    async def _check(self, st: Turns, result: Any) -> tuple[Rejection | None, Any]:
        """Run the role's ``check_output`` as a journaled step: (None, the accepted
        output) when it passes, else (the rejection, None)."""
        journal = st.journal
        n = journal.reserve()
        ctx = ToolContext(run_id=self.task.run_id, task_id=self.task.id,
                          agent_id=self.agent.agent_id, role=self.task.role, step=n,
                          idempotency_key=keys.idempotency_key(self.task, n),
                          board=self.board, task_input=self.task.input,
                          rejections=tuple(st.rejections), check_handoff=self.check_handoff,
                          on_entry=self.on_entry, patches=self.patches)

        async def check() -> Outcome:
            try:
                amended = await self.role.check_output(ctx, result)
            except ModelRetry as exc:  # "fresh" only when set: older records replay alike
                return Outcome({"problem": str(exc), "data": exc.data}
                               | ({"fresh": True} if exc.fresh else {}))
            if amended is None:
                return Outcome({"problem": ""})
            return Outcome({"problem": "", "output": serialize_output(amended)})

        out = await journal.run(n, "tool", "check_output", "", check)
        if out["problem"] or out.get("fresh"):  # a new sample may come with no words
            return Rejection(str(out["problem"]), out.get("data"), bool(out.get("fresh"))), None
        if "output" not in out:
            return None, result
        output = type(self.role).output  # an amended answer, rebuilt alike on replay
        return None, (out["output"] if output is str
                      else output.model_validate(out["output"]))  # type: ignore[union-attr]

    def _final(self, text: str, truncated: bool) -> Any:
        fmt = type(self.role).answer
        if fmt is not None:
            return fmt.parse(text, truncated=truncated, task_input=self.task.input)
        out = type(self.role).output
        if out is str and not text.strip():
            raise OutputError("Your reply is empty. Write your answer.")
        if out is str:
            return text
        return parse_output(text, out, truncated=truncated)  # type: ignore[arg-type]

    async def _view(self, journal: Journal, task_msgs: list[Message], pinned: Message) -> View:
        policy = type(self.role).compaction
        history = self.agent.prior(self.task.id) + task_msgs
        stalled = 0  # summaries in a row that covered nothing new (a part each may)
        while stalled < 3:
            view = policy.view(history, summary=self.agent.summary, pinned=pinned,
                               counter=self.agent.tokens)
            if isinstance(view, View):
                return view
            covered = self.agent.summary.last_seq if self.agent.summary else 0
            self.agent.summary = await summarize(journal, self.model, self.agent, view,
                                                 self.settings, self.pricer,
                                                 await self.window.learned())
            stalled = stalled + 1 if self.agent.summary.last_seq <= covered else 0
        raise ModelBehaviorError(f"task {self.task.id}: compaction did not converge: 3 "
                                 "summaries covered nothing new; the policy keeps asking")

    def _spent(self) -> Spent:
        return Spent(self.limits.run_tokens_used + self.tokens,
                     self.limits.run_cost_used + self.cost,
                     self.agent.tokens_used + self.tokens, self.agent.cost_used + self.cost)

    def _money_capped(self) -> bool:
        return (self.limits.max_cost_per_run is not None
                or type(self.role).max_cost_per_agent is not None)

    def _check_limits(self) -> None:
        cls = type(self.role)
        check_spent(self.limits, self._spent(), run_id=self.task.run_id,
                    agent=str(self.agent.agent_id), agent_tokens_cap=cls.max_tokens_per_agent,
                    agent_cost_cap=cls.max_cost_per_agent)

    def _on_commit(self, writes: Writes | None) -> None:
        if writes is not None:
            self.agent.committed(self.task.id, writes.messages)

    def _counts(self) -> Counts:
        journal = self.journal
        return Counts(journal.replayed if journal else 0, journal.executed if journal else 0,
                      self.tokens, self.cost)

    def _complete(self, result: Any, pending: list[Message],
                  step: PendingStep | None) -> Completed:
        """The task's answer, and what commits with it: the final model step (if not
        committed yet) and the messages pending since the last commit."""
        writes = Writes(messages=list(pending))
        if step is not None and step.writes is not None:
            # the final model step's own messages come first, as if committed before
            writes.messages[:0] = step.writes.messages
        return Completed(result, serialize_output(result), writes, step.result if step
                         else None, self._counts(), patched=self.patches)

    def _fail(self, error: str, pending: list[Message]) -> Failed:
        """A failed attempt: its messages are to be stored, marked so later views skip them."""
        marker = Message("user", f"(attempt {self.task.attempt} failed: {error})",
                         name=ATTEMPT_FAILED, task_id=self.task.id)
        return Failed(error, (*pending, marker), retry=True, counts=self._counts())
