"""Per-agent compaction policies: what part of its history the model sees.

Compaction changes the model's view, never the store: raw messages stay, and a
summary is a :class:`CompactionRecord` saying which message range it replaces.
Every policy keeps the system prompt and the current task's input (the runtime
pins them) and never separates a tool call from its results.

A policy gets the agent's history (oldest first; the pinned input message is
part of it) and returns a :class:`View`. ``Summarize`` may instead ask for a
new summary (:class:`SummaryRequest`); the runtime runs that as a journaled
step with the agent's model and asks again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from orchestra._errors import UserError
from orchestra._types import CompactionRecord, Message
from orchestra.tokens import MESSAGE_OVERHEAD, count_tokens, estimate_tokens

TokenCounter = Callable[[Message], int]


def message_tokens(message: Message) -> int:
    """Tokens of one message including tool-call arguments (exact with tiktoken)."""
    total = MESSAGE_OVERHEAD + count_tokens(message.content)
    for call in message.tool_calls:
        total += count_tokens(call.name) + count_tokens(call.arguments)
    return total


@dataclass(frozen=True, slots=True)
class View:
    """What the model sees of the history: an optional summary, then messages."""

    messages: tuple[Message, ...]
    summary: CompactionRecord | None = None


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """Ask the runtime to summarize ``messages`` (stored, seq ``first..last``)."""

    messages: tuple[Message, ...]
    previous: CompactionRecord | None
    max_tokens: int


def blocks(history: Sequence[Message]) -> list[list[Message]]:
    """Group messages so an assistant tool call and its tool results stay together."""
    groups: list[list[Message]] = []
    for m in history:
        if m.role == "tool" and groups and (groups[-1][0].tool_calls):
            groups[-1].append(m)
        else:
            groups.append([m])
    return groups


def tail_blocks(history: Sequence[Message]) -> Iterator[list[Message]]:
    """``reversed(blocks(history))``, built lazily from the end.

    A policy keeping the newest messages reads only what it keeps: grouping a
    long-lived agent's whole history at every model call made each call cost
    O(history), and a worker's throughput fell as its runs grew.
    """
    tools: list[Message] = []  # tool results seen (newest first), not yet grouped
    for i in range(len(history) - 1, -1, -1):
        m = history[i]
        if m.role == "tool":
            tools.append(m)
            continue
        if tools and m.tool_calls:
            yield [m, *reversed(tools)]
        else:
            yield from ([t] for t in tools)  # results with no call before them stand alone
            yield [m]
        tools = []
    yield from ([t] for t in tools)


def _keep_pinned(kept: list[Message], pinned: Message | None) -> tuple[Message, ...]:
    """``kept`` is a tail of the history: a pinned input not in it is older, so it
    goes first (right before the first kept message after it)."""
    if pinned is None or any(m is pinned for m in kept):
        return tuple(kept)
    return (pinned, *kept)


def _tail_within(history: Sequence[Message], budget: int, counter: TokenCounter,
                 pinned: Message | None) -> list[Message]:
    """The newest whole blocks whose tokens fit in ``budget`` (pinned counts first)."""
    spent = counter(pinned) if pinned is not None else 0
    kept: list[Message] = []
    for block in tail_blocks(history):
        cost = sum(counter(m) for m in block if m is not pinned)
        if kept and spent + cost > budget:
            break
        spent += cost
        kept[:0] = block
    return kept


class CompactionPolicy(ABC):
    """Decides the model's view of an agent's history. Subclass to write your own."""

    summarizes: bool = False
    """True for policies that use summaries (the runtime then loads compaction records)."""

    @abstractmethod
    def view(self, history: Sequence[Message], *, summary: CompactionRecord | None,
             pinned: Message | None, counter: TokenCounter = message_tokens
             ) -> View | SummaryRequest:
        """Return the view, or (summarizing policies) a request for a new summary."""


class KeepAll(CompactionPolicy):
    """The model sees everything (fine for short-lived agents)."""

    def view(self, history: Sequence[Message], *, summary: CompactionRecord | None,
             pinned: Message | None, counter: TokenCounter = message_tokens) -> View:
        return View(tuple(history))


class SlidingWindow(CompactionPolicy):
    """The last ``last`` messages (widened so tool calls keep their results)."""

    def __init__(self, last: int = 20) -> None:
        if last < 1:
            raise UserError(f"{type(self).__name__}(last={last!r}): last must be >= 1")
        self.last = last

    def view(self, history: Sequence[Message], *, summary: CompactionRecord | None,
             pinned: Message | None, counter: TokenCounter = message_tokens) -> View:
        kept: list[Message] = []
        for block in tail_blocks(history):
            if kept and len(kept) + len(block) > self.last:
                break
            kept[:0] = block
        return View(_keep_pinned(kept, pinned))


class TaskWindow(SlidingWindow):
    """The last ``last`` messages of the current task only (from its pinned input on):
    for an agent whose tasks are independent, each asked as if it were the first (a
    coder writing another module is asked as a user asks the model once). Its earlier
    tasks stay in the store, for ``recall`` and the board."""

    def view(self, history: Sequence[Message], *, summary: CompactionRecord | None,
             pinned: Message | None, counter: TokenCounter = message_tokens) -> View:
        if pinned is not None:
            start = next((i for i, m in enumerate(history) if m is pinned), None)
            history = history[start:] if start is not None else [pinned]
        return super().view(history, summary=summary, pinned=pinned, counter=counter)


class TokenBudget(CompactionPolicy):
    """The newest messages that fit in ``max_tokens``; older ones are hidden."""

    def __init__(self, max_tokens: int = 8000) -> None:
        if max_tokens < 1:
            raise UserError(f"TokenBudget(max_tokens={max_tokens!r}): must be >= 1")
        self.max_tokens = max_tokens

    def view(self, history: Sequence[Message], *, summary: CompactionRecord | None,
             pinned: Message | None, counter: TokenCounter = message_tokens) -> View:
        kept = _tail_within(history, self.max_tokens, counter, pinned)
        return View(_keep_pinned(kept, pinned))


class Summarize(CompactionPolicy):
    """Above ``threshold`` tokens, older messages are replaced by a model-written summary.

    The newest ``keep_tokens`` worth of messages stay verbatim; everything older
    (and any previous summary) is folded into one new summary of at most
    ``summary_tokens``. Each summary is a journaled step, replayed on resume.
    """

    summarizes = True

    def __init__(self, threshold: int = 6000, keep_tokens: int = 2000,
                 summary_tokens: int = 500) -> None:
        if not 0 < keep_tokens < threshold:
            raise UserError(f"Summarize(threshold={threshold}, keep_tokens={keep_tokens}): "
                            "need 0 < keep_tokens < threshold")
        if summary_tokens < 16:
            raise UserError(f"Summarize(summary_tokens={summary_tokens}): must be >= 16")
        self.threshold = threshold
        self.keep_tokens = keep_tokens
        self.summary_tokens = summary_tokens

    def view(self, history: Sequence[Message], *, summary: CompactionRecord | None,
             pinned: Message | None, counter: TokenCounter = message_tokens
             ) -> View | SummaryRequest:
        covered = summary.last_seq if summary else 0
        visible = [m for m in history if not (m.seq and m.seq <= covered) or m is pinned]
        total = sum(counter(m) for m in visible)
        if summary is not None:
            total += estimate_tokens(summary.summary) + MESSAGE_OVERHEAD
        if total <= self.threshold:
            return View(tuple(visible), summary)
        tail = _tail_within(visible, self.keep_tokens, counter, pinned)
        tail_ids = {id(m) for m in tail}
        # only stored messages (seq > 0) can be covered by a compaction record
        fold = [m for m in visible if id(m) not in tail_ids and m.seq > 0 and m is not pinned]
        if not fold:
            return View(_keep_pinned(tail, pinned), summary)
        return SummaryRequest(tuple(fold), summary, self.summary_tokens)


def summary_prompt(request: SummaryRequest) -> str:
    """The instruction given to the agent's model to write a summary."""
    parts = ["Summarize the conversation below for your own future reference. Keep decisions, "
             "facts, file names, open problems and anything you promised to do. Be concise: at "
             f"most {request.max_tokens * 3} characters. Reply with the summary text only."]
    if request.previous is not None:
        parts.append(f"Earlier summary:\n{request.previous.summary}")
    parts.append("Conversation:\n" + "\n".join(_line(m) for m in request.messages))
    return "\n\n".join(parts)


def _line(m: Message) -> str:
    calls = "".join(f" [calls {c.name}({c.arguments})]" for c in m.tool_calls)
    return f"{m.role}: {m.content}{calls}"


def summary_part(request: SummaryRequest, room: int,
                 count: Callable[[str], int] = count_tokens) -> SummaryRequest:
    """The oldest messages of ``request`` whose :func:`summary_prompt` fits ``room``
    tokens: a fold larger than the model's window is summarized a part at a time, each
    part a record of its own that the next folds in (the whole fold in one request
    fails as "exceeds the context size" on a small local model). At least one message;
    alone over ``room``, its middle is cut."""
    spent = count(summary_prompt(replace(request, messages=())))
    kept: list[Message] = []
    for m in request.messages:
        cost = count(_line(m)) + 1
        if spent + cost > room:
            break
        spent += cost
        kept.append(m)
    if not kept:
        first = request.messages[0]
        chars = max(200, (room - spent) * 3)  # about three characters a token, at least
        if len(first.content) > chars:
            cut = len(first.content) - chars
            first = replace(first, content=f"{first.content[:chars // 2]}\n[... {cut} "
                            f"characters cut ...]\n{first.content[-(chars // 2):]}")
        kept.append(first)
    return replace(request, messages=tuple(kept))
