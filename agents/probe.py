"""Run one candidate module on inputs and record what each call did, for
:mod:`agents.agreement`. The inputs are the calls the tester's tests make (their expected
values ignored: a small model's predictions cannot be trusted, its calls can be run) or a
smoke run's; one sandboxed child per candidate, each call with its own timer.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from pathlib import Path

from agents.checks import dotted, parsed
from agents.sandbox import run_python
from agents.testsplit import guard_lines

__all__ = ["Probe", "calls_in_tests", "mentions", "run_calls"]

Probe = tuple[str, str]
"""One input: (the statements before the call, the call's expression), as source."""

MAX_CALLS = 40

_CHILD = r'''
import importlib, io, json, re, signal, sys, traceback, types
job = json.loads(sys.stdin.read())
out = {}
real = sys.stdout
sys.stdout = io.StringIO()
class _Late(BaseException):
    pass
def _late(*_):
    raise _Late()
signal.signal(signal.SIGALRM, _late)
try:
    mod = importlib.import_module(job["module"])
except BaseException as exc:
    real.write(json.dumps({"import": type(exc).__name__}))
    raise SystemExit(0)
own = getattr(mod, "__file__", None)
for key, setup, expr in job["calls"]:
    ns = {"__name__": "__probe__"}
    try:
        exec(job["preamble"], ns)
    except BaseException:
        pass
    signal.setitimer(signal.ITIMER_REAL, job["per_call"])
    try:
        exec(setup, ns)
        value = eval(expr, ns)
        if isinstance(value, (types.GeneratorType, map, filter, zip, enumerate, reversed)):
            value = list(value)
        signal.setitimer(signal.ITIMER_REAL, 0)
        try:
            text = repr(value)
        except BaseException:
            text = "<unrepresentable>"
        out[key] = "=" + re.sub(r" at 0x[0-9a-fA-F]+", "", text)[:300]
    except _Late:
        out[key] = "~"
    except BaseException as exc:
        signal.setitimer(signal.ITIMER_REAL, 0)
        frames = traceback.extract_tb(exc.__traceback__)
        mine = own is not None and any(f.filename == own for f in frames)
        out[key] = ("!" if mine else "?") + type(exc).__name__
real.write(json.dumps({"runs": out}))
'''


def _has_call(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) for n in ast.walk(node))


def _raises_block(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.With) and any(
        isinstance(i.context_expr, ast.Call) and ast.unparse(i.context_expr.func).endswith(
            "raises") for i in stmt.items)


def calls_in_tests(tests: str, names: Sequence[str]) -> tuple[str, list[Probe]]:
    """The tests' imports (one preamble) and the calls their test functions make of the
    module, each after the statements before it in its test, without expected values."""
    if (tree := parsed(tests)) is None:
        return "", []
    guarded = guard_lines(tree)  # the module's names, taken one by one
    preamble = "\n".join(ast.unparse(n) for n in tree.body
                         if isinstance(n, (ast.Import, ast.ImportFrom)) or n in guarded)
    found: list[Probe] = []
    for fn in _test_functions(tree):
        used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {
            n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)}
        if names and not used & set(names):
            continue
        setup: list[str] = []
        for stmt in fn.body:
            for expr in _exprs(stmt):
                if _has_call(expr):
                    found.append(("\n".join(setup), ast.unparse(expr)))
            if not isinstance(stmt, ast.Assert) and not _raises_block(stmt):
                setup.append(ast.unparse(stmt))
    return preamble, list(dict.fromkeys(found))[:MAX_CALLS]


def _test_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    """The test functions of a test file, those of its ``Test*`` classes among them."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            out += [m for m in node.body if isinstance(m, ast.FunctionDef)
                    and m.name.startswith("test")]
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            out.append(node)
    return out


def mentions(tests: str, names: Sequence[str]) -> bool:
    """``tests`` calls one of ``names`` (one that only imports the module tests nothing)."""
    if (tree := parsed(tests)) is None:
        return False
    wanted = set(names)
    called = [n.func for n in ast.walk(tree) if isinstance(n, ast.Call)]
    return any((f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute)
                else "") in wanted for f in called)


def _exprs(stmt: ast.stmt) -> list[ast.expr]:
    """The expressions of a statement whose value a test would check."""
    if isinstance(stmt, ast.Assert):
        test = stmt.test
        if isinstance(test, ast.Compare):
            return [e for e in (test.left, *test.comparators) if not _approx(e)]
        return [test.operand if isinstance(test, ast.UnaryOp) else test]
    if _raises_block(stmt):
        assert isinstance(stmt, ast.With)
        return [s.value for s in stmt.body if isinstance(s, (ast.Expr, ast.Assign))]
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        return [stmt.value]
    if isinstance(stmt, ast.Expr):
        return [stmt.value]
    return []


def _approx(expr: ast.expr) -> bool:
    """A literal or ``pytest.approx(...)``: an expected value, not an input."""
    if isinstance(expr, ast.Call):
        return ast.unparse(expr.func).endswith("approx")
    return not _has_call(expr)


async def run_calls(root: Path, path: str, preamble: str, calls: Sequence[Probe], *,
                    per_call: float = 1.0) -> dict[str, str]:
    """Each call's outcome (see :mod:`agents.agreement`), keyed by its source, for the
    module at ``path`` as it is on disk now; ``{}`` when it does not import or there
    are no calls. Calls the child never reached (the whole run timed out) are ``~``."""
    if not calls:
        return {}
    keys = [f"{setup}\n{expr}".strip() for setup, expr in calls]
    job = json.dumps({"module": dotted(path), "preamble": preamble, "per_call": per_call,
                      "calls": [[k, s, e] for k, (s, e) in zip(keys, calls, strict=True)]})
    # the same repr of a set on every run: a replay and two candidates compare alike
    done = await run_python(root, ["-c", _CHILD], stdin=job.encode(), stderr=False,
                            timeout=min(5.0 + per_call * len(calls), 30.0), PYTHONHASHSEED="0")
    out = done[1] if done else b""
    try:
        data = json.loads(out.decode("utf-8", errors="replace") or "{}")
    except ValueError:
        data = {}
    if "import" in data:
        return {}
    runs = data.get("runs") or {}
    return {k: str(runs.get(k, "~")) for k in keys}
