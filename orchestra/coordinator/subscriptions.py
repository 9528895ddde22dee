"""Which roles an entry triggers, decided in pure functions; committed in one place.

Every entry a task posts (its route's, and its output when the role ``posts_output``, at
its end: :func:`at_task_end`; a tool's, as the tool posts it: :func:`tool_entry_hook`;
a person's: :func:`post_entry`) is matched here against every role's ``consumes`` before
it commits, and the pipeline's control (``coordinator.control``) picks what acts now:
each trigger becomes a :class:`NewTrigger` in the same ``Writes``, so the entry, the
task it causes and the consumption record (unique per run, trigger and role) commit in
one transaction or not at all. A join (``When``) is decided over the board as this
process reads it plus the entries being committed; two ends committing at once may each
miss the other's entries, so :func:`catch_up` decides again over the committed board
whenever a run runs out of work (and when it is resumed): the consumption's uniqueness
makes a trigger decided twice commit once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pydantic

from orchestra._entries import Consumption, Entry, visible_to
from orchestra._errors import UserError
from orchestra._types import AgentId, Task
from orchestra.control import Choice, Options
from orchestra.coordinator.board_end import BoardEnd, EndReads, decide_end, ends_since_last_entry
from orchestra.coordinator.control import choose, chosen, controller_role
from orchestra.coordinator.pipeline import Pipeline
from orchestra.store.entry_protocol import NewEntry, NewTrigger
from orchestra.store.protocol import NewTask, Writes
from orchestra.subscriptions import BoardView, On, When
from orchestra.tools import EntryHook


class EntryReads(Protocol):
    """What a task's end reads of the board."""

    async def get_entries(self, run_id: str, *, type: str | None = None,
                          after: int = 0) -> list[Entry]: ...


class EntryStore(EntryReads, Protocol):
    """What catching up, and posting from outside a task, touch."""

    async def get_consumptions(self, run_id: str) -> list[Consumption]: ...
    async def post_triggers(self, run_id: str, triggers: Sequence[NewTrigger]
                            ) -> list[Consumption]: ...
    async def add_tasks(self, run_id: str, tasks: Sequence[NewTask]) -> list[Task]: ...
    async def post_entry(self, run_id: str, author: str, entry: NewEntry, *,
                         triggers: Sequence[NewTrigger] = ()) -> Entry: ...


@dataclass(frozen=True)
class Subscriber:
    """One role's subscriptions, as the matching reads them."""

    role: str
    labels: frozenset[str]
    on: tuple[On, ...]
    joins: tuple[When, ...]


def subscribers(pipeline: Pipeline) -> tuple[Subscriber, ...]:
    """The pipeline's roles that consume anything."""
    found = []
    for role in pipeline.roles:
        cls = type(role)
        on = tuple(s for s in cls.consumes if isinstance(s, On))
        joins = tuple(s for s in cls.consumes if isinstance(s, When))
        if on or joins:
            found.append(Subscriber(role.name, frozenset(cls.labels), on, joins))
    return tuple(found)


def pending(new: NewEntry, run_id: str, author: str, task_id: str | None) -> Entry:
    """An entry about to commit, as the matching sees it (its position is not known yet:
    it sorts after every committed one)."""
    return Entry(new.id, run_id, 2**62, new.type, author, new.body, new.tags, new.scope,
                 task_id)


def entry_triggers(pipeline: Pipeline, subs: Sequence[Subscriber], entry: Entry
                   ) -> list[NewTrigger]:
    """The roles ``entry`` triggers (at most one task per role: its first ``On`` that
    matches), each with its task's input checked against the role's ``input`` model."""
    made = []
    for sub in subs:
        if not visible_to(entry.scope, entry.author_role, sub.role, sub.labels):
            continue  # a role outside an entry's scope never hears of it
        for on in sub.on:
            if on.type.__name__ != entry.type or (entry.author_role == sub.role
                                                  and not on.own):
                continue
            value = on.type.model_validate(entry.body)
            if on.where is not None and not on.where(value):
                continue
            made.append(NewTrigger(entry.id, sub.role,
                                   _input(pipeline, sub.role, on.task_input(value), entry)))
            break
    return made


def join_triggers(pipeline: Pipeline, subs: Sequence[Subscriber], entries: Sequence[Entry],
                  consumed: Iterable[tuple[str, str]] = ()) -> list[NewTrigger]:
    """The joins that hold over ``entries`` (each role sees only its scope) and have not
    fired (``consumed``: the (trigger, role) pairs recorded)."""
    done = set(consumed)
    made = []
    for sub in subs:
        if not sub.joins:
            continue
        board = BoardView(entries, sub.role, sub.labels)
        for join in sub.joins:
            trigger = f"join:{join.name}"
            if (trigger, sub.role) not in done and join.ready(board):
                made.append(NewTrigger(trigger, sub.role,
                                       _input(pipeline, sub.role, join.task_input(board),
                                              None)))
    return made


def _input(pipeline: Pipeline, role: str, value: Any, entry: Entry | None) -> Any:
    source = f"subscription of {role!r}" + (f" to entry {entry.id} ({entry.type})"
                                             if entry is not None else "")
    post = pipeline.check_post(NewTask(role, value), source)
    assert isinstance(post, NewTask)
    return post.input


def add_output(pipeline: Pipeline, task: Task, output: Any, writes: Writes) -> None:
    """A role that ``posts_output`` posts its output as a public entry of its type."""
    role = pipeline.role(task.role)
    if type(role).posts_output and isinstance(output, pydantic.BaseModel):
        writes.entries.append(NewEntry.of(output))


async def at_task_end(pipeline: Pipeline, store: EndReads, task: Task, output: Any,
                      writes: Writes) -> BoardEnd | None:
    """Before a task's end commits: its output as an entry (if its role posts it), and the
    triggers of every entry it posts (and of the joins they complete) into ``writes``.
    How the board ends the run once it commits (``Pipeline.done``, ``Pipeline.stall``):
    then it triggers nothing more, and the caller claims nothing more."""
    add_output(pipeline, task, output, writes)
    add_choice(pipeline, task, output, writes)
    subs = subscribers(pipeline)
    stall = pipeline.stall
    counts_quiet = stall is not None and stall.after is not None
    joins = any(s.joins for s in subs)  # a tool of this task may have completed one
    if not writes.entries and not counts_quiet and not joins:
        return None  # the board does not change
    if not subs and pipeline.done is None and stall is None:
        return None
    author = str(AgentId(task.run_id, task.role))
    new = [pending(e, task.run_id, author, task.id) for e in writes.entries]
    board: list[Entry] | None = None
    if pipeline.done is not None or stall is not None or joins:
        committed = await store.get_entries(task.run_id)
        board = [*committed, *new]
        quiet = 0
        if counts_quiet and not new:  # this end is one more that posted nothing
            quiet = 1 + ends_since_last_entry(committed, await store.list_tasks(
                task.run_id, status="completed"))
        end = decide_end(pipeline, board, quiet)
        if end is not None:
            return end
    wanted = [t for entry in new for t in entry_triggers(pipeline, subs, entry)]
    if board is not None and joins:  # each join fires once: not those that have
        consumed = {(c.trigger, c.role) for c in await store.get_consumptions(task.run_id)}
        wanted += join_triggers(pipeline, subs, board, consumed)
    now, ask = choose(pipeline, wanted, _about(new))
    writes.triggers.extend(now)
    writes.tasks.extend(ask)
    return None


def _about(entries: Iterable[Entry]) -> dict[str, str]:
    """What a controller reads of each entry it chooses for (its type and body)."""
    return {e.id: f"{e.type} {json.dumps(e.body)[:300]}" for e in entries}


def add_choice(pipeline: Pipeline, task: Task, output: Any, writes: Writes) -> None:
    """A controller's task ends: the work it chose commits with its end."""
    if task.role != controller_role(pipeline):
        return
    if not isinstance(output, Choice):
        raise UserError(f"controller {task.role!r} answered {type(output).__name__}; its "
                        "output must be orchestra.control.Choice")
    writes.triggers.extend(chosen(Options.model_validate(task.input), output))


async def catch_up(pipeline: Pipeline, store: EntryStore, run_id: str) -> bool:
    """Commit every trigger the committed board calls for and no consumption records yet
    (entries posted by tools or from Python, joins two concurrent ends each missed, work
    the control held back): whether it made work."""
    subs = subscribers(pipeline)
    if not subs:
        return False
    entries = await store.get_entries(run_id)
    consumed = {(c.trigger, c.role) for c in await store.get_consumptions(run_id)}
    wanted = [t for e in entries for t in entry_triggers(pipeline, subs, e)
              if (t.trigger, t.role) not in consumed]
    wanted += join_triggers(pipeline, subs, entries, consumed)
    now, ask = choose(pipeline, wanted, _about(entries))
    asked = await store.add_tasks(run_id, ask) if ask else []
    made = await store.post_triggers(run_id, now) if now else []
    return bool(made) or any(t.status == "pending" for t in asked)


def tool_entry_hook(pipeline: Pipeline) -> EntryHook | None:
    """What an entry a tool posts triggers, decided as it is posted (``ctx.post``): the
    triggers (and a controller's task) join the tool's writes and commit with its
    journal entry. Joins over the board are decided at the task's end or when the run
    idles (:func:`catch_up`)."""
    subs = subscribers(pipeline)
    if not subs:
        return None

    def hook(agent_id: str, new: NewEntry) -> Writes:
        entry = pending(new, AgentId.parse(agent_id).run_id, agent_id, None)
        now, ask = choose(pipeline, entry_triggers(pipeline, subs, entry), _about([entry]))
        return Writes(triggers=now, tasks=ask)

    return hook


async def post_entry(pipeline: Pipeline, store: EntryStore, run_id: str, new: NewEntry,
                     author: str) -> Entry:
    """Post an entry from outside any task (a person, a script), with the tasks it
    triggers and their consumptions in its own transaction."""
    entry = pending(new, run_id, author, None)
    now, ask = choose(pipeline, entry_triggers(pipeline, subscribers(pipeline), entry),
                      _about([entry]))
    posted = await store.post_entry(run_id, author, new, triggers=now)
    if ask:  # a controller chooses: its task (keyed, so a second post asks once)
        await store.add_tasks(run_id, ask)
    return posted
