"""The examples a spec states, as test functions the pipeline writes itself.

A spec that says ``evaluate("1 + 2 * 3")`` is ``7`` has stated a test; no model needs
to be trusted to copy it. These cases are read from the markdown with a few strict
rules (a backticked call or argument, a verb of equality, a backticked literal), so
what is found is what the spec says, and anything ambiguous is left out:

- `` `f(args)` is `value` `` (also: becomes, returns, gives, ``->``, ``==``, equals),
  `` `f(a)` and `f(b)` are `value` ``, and `` `f(args) == value` `` in one pair;
- `` `args` is `value` `` in a bullet that names one function of the module (or in a
  module with one function): ``1994`` is ``"MCMXCIV"`` under ``to_roman``;
- `` `name = value` gives `result` `` for a parameter of the single function;
- "raises `SomeError`: `f(args)`, `g(args)`" (and bare arguments for that function).

Only calls of the module's own top-level functions, with literal arguments and
expected values, are kept: a method of a class needs state a sentence does not give.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence

from agents.specexamples import stated_cases
from agents.specread import STDLIB, Api, SpecCase, calls_in, fits, read_api

__all__ = ["CASE_PREFIX", "SpecCase", "add_cases", "case_strings", "render_cases",
           "spec_cases"]

CASE_PREFIX = "test_spec_example_"
"""The names of the tests written from the spec's words (trusted as the spec itself)."""

_TICKED = re.compile(r"`([^`]+)`")
_EQUAL = re.compile(r"^\s*(?:is|are|becomes|become|returns|return|gives|give|->|→|==|"
                    r"equals|evaluates to|encodes to|decodes to)\s*$")
_JOIN = re.compile(r"^\s*(?:,|and|or|,\s*and)\s*$")
_INLINE = re.compile(r"(.+?\))\s*(?:==|->|→)\s*(.+)")
_RAISES = re.compile(r"\braises?\s*$")
_MARK = "# Examples the spec states, written by the pipeline from the spec's own words."


def _literal(text: str) -> str | None:
    """``text`` as Python source if it is a literal (``"IV"``, ``[("a", 1)]``, ``-1``)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
        ast.literal_eval(tree)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    return ast.unparse(tree)


def _built(node: ast.expr, classes: frozenset[str], *, methods: bool) -> bool:
    """``node`` is a value built from literals and the module's classes alone
    (``Point(4, 3)``), or with ``methods``, a method called on one
    (``Rect(0, 0, 4, 3).contains(Point(4, 3))``): it needs no state a sentence omits."""
    try:
        ast.literal_eval(node)
        return True
    except ValueError:
        pass
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_built(e, classes, methods=False) for e in node.elts)
    if not isinstance(node, ast.Call) or any(k.arg is None for k in node.keywords) or any(
            isinstance(a, ast.Starred) for a in node.args):
        return False
    args = [*node.args, *(k.value for k in node.keywords)]
    if isinstance(node.func, ast.Name) and node.func.id in classes:
        return all(_built(a, classes, methods=False) for a in args)
    return (methods and isinstance(node.func, ast.Attribute) and isinstance(
        node.func.value, ast.Call) and _built(node.func.value, classes, methods=False)
        and all(_built(a, classes, methods=False) for a in args))


def _value(text: str, classes: frozenset[str]) -> str | None:
    """``text`` as an expected value: a literal, or a value of the module's classes."""
    literal = _literal(text)
    if literal is not None or not classes:
        return literal
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    return ast.unparse(node) if isinstance(node, ast.Call) and _built(
        node, classes, methods=False) else None


def _call(text: str, functions: dict[str, list[str]],
          classes: frozenset[str] = frozenset()) -> str | None:
    """``text`` as source if it calls one of ``functions`` with literal arguments, or a
    method of an instance of one of ``classes`` built in place."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if classes and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return ast.unparse(node) if _built(node, classes, methods=True) else None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in functions):
        return None
    try:
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            ast.literal_eval(arg)
    except ValueError:
        return None
    if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords):
        return None
    return ast.unparse(node)


def _implied(text: str, function: str | None, functions: dict[str, list[str]]) -> str | None:
    """A bare argument (``1994``) or ``param = value`` as a call of ``function``."""
    if function is None:
        return None
    params = functions[function]
    m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=\s*(.+)", text)
    if m and params == [m.group(1)] and _literal(m.group(2)) is not None:
        return f"{function}({m.group(1)}={_literal(m.group(2))})"
    value = _literal(text)
    if value is None or len(params) != 1:
        return None
    return f"{function}({value})"


def _functions(public_api: Sequence[str]) -> dict[str, list[str]]:
    """Top-level functions of the API with their required parameters (classes and the
    methods listed under a class left out: a call of a method needs an instance)."""
    return {name: fn.required for name, fn in read_api(public_api).functions.items()}


def _sentences(section: str) -> list[str]:
    """Bullets and paragraphs, joined across wrapped lines (code fences dropped)."""
    text = re.sub(r"```.*?```", "", section, flags=re.S)
    blocks = re.split(r"\n\s*\n|\n(?=\s*[-*] )", text)
    return [" ".join(b.split()) for b in blocks if b.strip()]


def spec_cases(section: str, public_api: Sequence[str]) -> list[SpecCase]:
    """The examples ``section`` (a module's part of a spec) states for its functions and
    classes: backticked sentences (below), then every other phrasing
    :mod:`agents.specexamples` reads."""
    functions = _functions(public_api)
    api = read_api(public_api)
    classes = frozenset(c for c in api.classes if not c.endswith(("Error", "Exception")))
    only = next(iter(functions)) if len(functions) == 1 else None
    cases: list[SpecCase] = []
    for sentence in _sentences(section) if functions or classes else []:
        # a function named bare or by its signature (a bullet that opens with
        # `f(cents: int) -> str` and then gives `1250` -> `"12.50"`)
        named = [n for t in _TICKED.findall(sentence)
                 if (n := t.split("(")[0].strip()) in functions]
        subject = named[0] if len(set(named)) == 1 else only
        cases += _sentence_cases(sentence, functions, subject, classes)
    cases += stated_cases(section, api)
    written = {call for call, _, _ in calls_in(section, sorted(api.functions))}
    return [c for c in dict.fromkeys(cases) if _verbatim(c, section)
            and (c.call in written or _typed(c, api))]


def _verbatim(case: SpecCase, section: str) -> bool:
    """Every string a case holds is written in the spec (as it is, or escaped as a
    literal writes it): a case read wrongly is left out instead of trusted."""
    flat = " ".join(section.split())
    for s in case_strings([case]):
        forms = {s, repr(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1]}
        if not any(f in section for f in forms) and " ".join(s.split()) not in flat:
            return False
        if s.strip() and s not in section and repr(s)[1:-1] not in section and \
                json.dumps(s, ensure_ascii=False)[1:-1] not in section:
            return False
    return True


def _typed(case: SpecCase, api: Api) -> bool:
    """A value stated for a value, read as a call of an API function, whose expected
    value does not fit its return type (a token's value taken for the tokenizer's) is no
    case of it (a call the spec writes out is taken as written)."""
    name = case.call.split("(")[0]
    fn = api.functions.get(name)
    return fn is None or case.expected is None or case.setup != () or fits(
        case.expected, fn.returns)


def _sentence_cases(sentence: str, functions: dict[str, list[str]],
                    subject: str | None, classes: frozenset[str] = frozenset()
                    ) -> list[SpecCase]:
    parts = _TICKED.split(sentence)  # even: prose, odd: backticked
    out: list[SpecCase] = []
    pending: list[str] = []  # calls joined by "and" before a verb
    raising: str | None = None
    for i in range(1, len(parts), 2):
        tick, before = parts[i], parts[i - 1]
        whole = _INLINE.fullmatch(tick)  # `f(2) == 4` in one pair of backticks
        if whole and _call(whole.group(1), functions) and _literal(whole.group(2)):
            out.append(SpecCase(str(_call(whole.group(1), functions)),
                                expected=_literal(whole.group(2))))
            pending, raising = [], None
            continue
        if raising and not re.search(r"[.;]", before):
            call = _call(tick, functions) or _implied(tick, subject, functions)
            if call and not _literal_name(tick):
                out.append(SpecCase(call, error=raising))
                continue
        raising = None
        if _RAISES.search(before) and _literal_name(tick):
            if i + 1 < len(parts) and parts[i + 1].lstrip().startswith(":"):
                raising = tick
            pending = []
            continue
        call = _call(tick, functions, classes) or _implied(tick, subject, functions)
        if pending and _EQUAL.match(before):
            expected = _value(tick, classes)
            if expected is not None:
                out += [SpecCase(c, expected=expected) for c in pending]
            pending = []
            continue
        if call and (not pending or _JOIN.match(before)):
            pending.append(call)
        else:
            pending = [call] if call else []
    return out


def _literal_name(tick: str) -> bool:
    """An error class name after another (``ValueError`` or ``TypeError``), not a case."""
    return bool(re.fullmatch(r"[A-Z]\w*(?:Error|Exception)", tick.strip()))


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
    """A statement before a case's check, as lines; a bare call (``halve(8)``, a value
    shown earlier in a session) that raises is passed over, so one wrong answer of a
    module fails its own case, not every case after it (a module that answers right
    runs it as the spec did, state and all)."""
    tree = ast.parse(source)
    text = ast.unparse(tree).split("\n")
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr) and isinstance(
            tree.body[0].value, ast.Call):
        return ["try:", *(f"    {line}" for line in text), "except Exception:", "    pass"]
    return text


def _operand(source: str) -> str:
    """``source`` as one operand of ``==`` (a comparison or an operation in parentheses)."""
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
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
              and isinstance(call.value.func, ast.Name) and _literal(ast.unparse(
                  ast.Tuple([*call.value.args, *(k.value for k in call.value.keywords)],
                            ast.Load()))) is not None and _literal(case.expected or "None"))
    if simple:
        return []
    bound = {n.id for t in trees for n in ast.walk(t) if isinstance(n, ast.Name)
             and not isinstance(n.ctx, ast.Load)} | {
        a.arg for t in trees for a in ast.walk(t) if isinstance(a, ast.arg)}
    used = {n.id for t in trees for n in ast.walk(t) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}
    return sorted(used - bound - _BUILTINS)


_BUILTINS = frozenset(dir(__import__("builtins")))
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
