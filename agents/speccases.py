"""The examples a spec states (``evaluate("1 + 2 * 3") == 7``, a doctest session, a
table), as test functions the pipeline writes itself: no model needs to be trusted to
copy them. Only unambiguous forms are read (:mod:`agents.specexamples`).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence

from agents.checks import parsed_expr
from agents.specexamples import stated_cases
from agents.specread import STDLIB, Api, SpecCase, calls_in, fits, free_names, literal, read_api

__all__ = ["CASE_PREFIX", "SpecCase", "add_cases", "case_strings", "render_cases",
           "spec_cases"]

CASE_PREFIX = "test_spec_example_"
"""The names of the tests written from the spec's words (trusted as the spec itself)."""

_MARK = "# Examples the spec states, written by the pipeline from the spec's own words."


def spec_cases(section: str, public_api: Sequence[str]) -> list[SpecCase]:
    """The examples ``section`` (a module's part of a spec) states for its functions."""
    api = read_api(public_api)
    cases = stated_cases(section, api)
    written = {call for call, _, _ in calls_in(section, sorted(api.functions))}
    return [c for c in dict.fromkeys(cases) if _verbatim(c, section)
            and (c.call in written or _typed(c, api))]


def _verbatim(case: SpecCase, section: str) -> bool:
    """Every string a case holds is written in the spec (as it is, or escaped as a
    literal writes it): a case read wrongly is left out instead of trusted."""
    return all(not s.strip() or any(f in section for f in (
        s, repr(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1])) for s in case_strings([case]))


def _typed(case: SpecCase, api: Api) -> bool:
    """No case whose expected value does not fit its function's return type (a token's
    value taken for the tokenizer's); a call the spec writes out is taken as written."""
    name = case.call.split("(")[0]
    fn = api.functions.get(name)
    return fn is None or case.expected is None or case.setup != () or fits(
        case.expected, fn.returns)


def render_cases(cases: Sequence[SpecCase], module: str) -> str:
    """Test functions for ``cases``, importing from ``module`` (dotted); '' for none."""
    if not cases:
        return ""
    lines = [_MARK, f"import {module} as _spec_module", ""]
    if any(c.error for c in cases):
        lines.insert(1, "import pytest as _spec_pytest")
    for n, case in enumerate(cases, 1):
        lines.append(f"def {CASE_PREFIX}{n}():")
        names = _free(case)
        call = case.call if names else f"_spec_module.{case.call}"
        lines += [f"    {name} = " + (f"getattr(_spec_module, {name!r}, None) or "
                                      f"__import__({name!r})" if name in STDLIB else
                                      f"_spec_module.{name}") for name in names]
        # re-written from the syntax tree: a string over several lines stays one line,
        # so indenting the statement never changes a value
        lines += [f"    {line}" for s in case.setup for line in _setup_lines(s)]
        if case.error:
            exc = case.error if case.error in _BUILTIN_ERRORS else f"_spec_module.{case.error}"
            lines += [f"    with _spec_pytest.raises({exc}):", f"        {call}", ""]
        else:
            lines += [f"    assert {_operand(call)} == {_operand(str(case.expected))}", ""]
    return "\n".join(lines).rstrip() + "\n"


def _setup_lines(source: str) -> list[str]:
    """A statement before a case's check, as lines; a bare call that raises is passed
    over, so one wrong answer fails its own case, not every case after it."""
    tree = ast.parse(source)
    text = ast.unparse(tree).split("\n")
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr) and isinstance(
            tree.body[0].value, ast.Call):
        return ["try:", *(f"    {line}" for line in text), "except Exception:", "    pass"]
    return text


def _operand(source: str) -> str:
    """``source`` as one operand of ``==`` (a comparison or an operation in parentheses)."""
    if (node := parsed_expr(source)) is None:
        return source
    simple = (ast.Call, ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.List,
              ast.Tuple, ast.Dict, ast.Set, ast.UnaryOp)
    return source if isinstance(node, simple) else f"({source})"


def _free(case: SpecCase) -> list[str]:
    """The names a case takes from the module, when it is more than one call of a
    function with literal values ([] for that: it is written ``_spec_module.f(...)``)."""
    trees = [ast.parse(s) for s in (*case.setup, case.call, case.expected or "None")]
    call = trees[-2].body[0]
    simple = (not case.setup and isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
              and isinstance(call.value.func, ast.Name) and literal(ast.unparse(
                  ast.Tuple([*call.value.args, *(k.value for k in call.value.keywords)],
                            ast.Load()))) is not None and literal(case.expected or "None"))
    return [] if simple else sorted(free_names(case))

_BUILTIN_ERRORS = frozenset(n for n in dir(__import__("builtins"))
                            if n.endswith(("Error", "Exception")))


def add_cases(tests: str, cases: Sequence[SpecCase], module: str) -> str:
    """``tests`` with the spec's cases appended (replacing an earlier appended block)."""
    head = tests.split(_MARK)[0].rstrip()
    block = render_cases(cases, module)
    return f"{head}\n\n\n{block}" if block and head else (block or head + "\n")


def case_strings(cases: Sequence[SpecCase]) -> set[str]:
    """The string values the cases hold (as arguments or expected values)."""
    out: set[str] = set()
    for case in cases:
        for source in (*case.setup, case.call, case.expected or "None"):
            out |= {n.value for n in ast.walk(ast.parse(source))
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return out
