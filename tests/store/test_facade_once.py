"""The store's logic is written once (issue 47, item 3): a public method whose body would
be the same on both backends lives in the shared facade (``store/facade*.py``), and
each backend's own ``store*.py`` keeps only what it does its own way."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from orchestra.store import SQLiteBlackboard
from orchestra.store.postgres import PostgresBlackboard


def _public(cls: type) -> dict[str, Callable[..., Any]]:
    return {name: fn for name, fn in inspect.getmembers(cls, _method)
            if not name.startswith("_")}


def _method(member: object) -> bool:
    return inspect.isfunction(member) or inspect.ismethod(member)  # ``open``: a classmethod


def _body(fn: Callable[..., Any]) -> str:
    """The method's statements without its docstring, the backend's words made alike."""
    node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    assert isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef)
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return ast.dump(ast.Module(body=body, type_ignores=[]))


def test_no_method_is_written_the_same_in_both_backends() -> None:
    sqlite, postgres = _public(SQLiteBlackboard), _public(PostgresBlackboard)
    twice = sorted(name for name in sqlite.keys() & postgres.keys()
                   if sqlite[name] is not postgres[name]
                   and _body(sqlite[name]) == _body(postgres[name]))
    assert twice == [], f"write these once, in orchestra/store/facade_*.py: {twice}"


def test_the_shared_methods_come_from_the_facade() -> None:
    sqlite, postgres = _public(SQLiteBlackboard), _public(PostgresBlackboard)
    shared = {name for name in sqlite.keys() & postgres.keys() if sqlite[name] is postgres[name]}
    assert {sqlite[name].__module__ for name in shared} == {
        "orchestra.store.facade_approvals", "orchestra.store.facade_board",
        "orchestra.store.facade_entries",
        "orchestra.store.facade_history", "orchestra.store.facade_runs",
        "orchestra.store.facade_tasks"}
    assert {"get_run", "post_handoff", "decide_approval", "events", "heartbeat",
            "prune_runs"} <= shared
    own = {name for name in sqlite.keys() | postgres.keys() if name not in shared}
    assert own == {"open", "close", "stats", "create_run", "set_run_status", "claim_task",
                   "claim_tasks", "complete_task", "start_step", "complete_step", "serve_run",
                   "claimable_runs", "get_messages", "follow", "migrate_status"}
