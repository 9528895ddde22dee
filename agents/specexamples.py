"""Examples a spec states in forms other than backticked sentences: code blocks (a script
whose results are given in comments, ``assert``/``==`` lines, doctest ``>>>`` sessions,
a listing that is not Python), calls in running prose with or without backticks
(``f(x) -> y``, ``f(x) returns y``), a value stated for a value (``"xyz" -> "1x1y1z"``)
under the one function it is about, "raises E for a, b, c" lists, and markdown tables
of inputs and outputs.

Each class of phrasing is read by one rule, and a rule keeps a case only when every
value in it is a literal the spec writes (or a table cell for a ``str`` parameter), the
values fit the signature's types, and nothing says "or" (alternatives are no single
expectation). What is left out is left to the model's tests, which only rank.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator

from agents.specdata import json_cases, table_cases
from agents.specread import (
    BUILTIN_NAMES,
    ERROR_NAME,
    STDLIB,
    Api,
    Function,
    SpecCase,
    calls_in,
    fits,
    literal,
    literal_before,
    stated_result,
)

__all__ = ["stated_cases"]

_FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.S | re.M)
_ERROR = ERROR_NAME
_VERB = re.compile(r"[`\s]*(==|->|→|=>|⇒|\bis\b|\bare\b|\breturns?\b|\bgives?\b|\bbecomes?\b"
                   r"|\byields?\b|\bevaluates to\b|\bequals\b|\bshould (?:be|return|give)\b"
                   r"|#)[`\s]*")
_RAISES = re.compile(r"[`\s]*\b(?:raises?|throws?)\b[`\s]*" + _ERROR)
_ARROW = re.compile(r"\s*(->|→|=>|⇒|\bbecomes\b|\bgives\b|\byields\b|\bturns into\b)\s*")


def stated_cases(section: str, api: Api) -> list[SpecCase]:
    """The examples ``section`` (a module's part of a spec) states, by every rule here."""
    cases: list[SpecCase] = []
    prose = _FENCE.sub("\n\n", section)
    for block in _FENCE.findall(section):
        cases += _block_cases(block, api)
    cases += table_cases(prose, api)
    text = "\n".join(line for line in prose.split("\n") if not line.lstrip().startswith("|"))
    cases += _call_cases(text, api, code=False)
    cases += _value_cases(text, api)
    cases += _raise_cases(text, api)
    return list(dict.fromkeys(cases))


def _expected(after: str, returns: str | None, code: bool) -> tuple[str | None, str | None]:
    """(expected literal, error) stated at the start of ``after`` (the text after a call)."""
    raised = _RAISES.match(after)
    if raised:
        return None, raised.group(1)
    verb = _VERB.match(after)
    if not verb or (verb.group(1) == "#" and not code):
        return None, None
    rest = after[verb.end():]
    if verb.group(1) != "#" and re.match(r"(?:not|also|called|used)\b", rest):
        return None, None
    return stated_result(rest, returns)


def _call_cases(text: str, api: Api, *, code: bool) -> list[SpecCase]:
    out = []
    for call, _, end in calls_in(text, sorted(api.functions)):
        fn = api.functions[call.split("(")[0]]
        expected, error = _expected(text[end:end + 800], fn.returns, code)
        if expected is not None or error is not None:
            out.append(SpecCase(call, expected=expected, error=error))
    return out


def _paragraph(text: str, at: int) -> str:
    start = max(text.rfind("\n\n", 0, at), text.rfind("\n- ", 0, at), text.rfind("\n* ", 0, at))
    ends = [e for e in (text.find("\n\n", at), text.find("\n- ", at), text.find("\n* ", at))
            if e >= 0]
    return text[max(start, 0):min(ends) if ends else len(text)]


def _subject(text: str, at: int, api: Api) -> Function | None:
    """The one function a value stated at ``at`` is about: the only one its paragraph
    names, else the module's only one; it must take one argument."""
    para = _paragraph(text, at)
    named = [f for f in api.functions if re.search(rf"(?<![\w.]){re.escape(f)}\b", para)]
    fns = named if named else list(api.functions)
    if len(fns) != 1:
        return None
    fn = api.functions[fns[0]]
    return fn if len(fn.required) == 1 else None


def _implied(fn: Function, value: str) -> str | None:
    param = fn.required[0]
    return f"{fn.name}({value})" if fits(value, fn.annotation(param)) else None


def _value_cases(text: str, api: Api) -> list[SpecCase]:
    """``"xyz" -> "1x1y1z"``: a value stated for a value, for the one function meant."""
    out = []
    for m in _ARROW.finditer(text):
        left = literal_before(text[:m.start()])
        if left is None or re.search(r"\w\($", text[:m.start()].rstrip("` ")[:-len(left)]):
            continue
        fn = _subject(text, m.start(), api)
        if fn is None:
            continue
        expected, error = stated_result(text[m.end():m.end() + 600], fn.returns)
        call = _implied(fn, left)
        if call and (expected is not None or error is not None):
            out.append(SpecCase(call, expected=expected, error=error))
    return out


# a quote inside a word is an apostrophe ("it's given something that isn't"), not a string
_QUOTED_OR_TICKED = re.compile(
    r"`([^`]+)`|(?<!\w)(\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')(?!\w)")


def _raise_cases(text: str, api: Api) -> list[SpecCase]:
    """"raises E for "A1", "", "??"" and "(`"12ab"`, `"3.5"`) raises E": each value
    given with the error, for the one function meant."""
    out = []
    for m in re.finditer(r"\b(?:raises?|throws?)\b[`\s]*" + _ERROR + "`?", text):
        fn = _subject(text, m.start(), api)
        if fn is None:
            continue
        after = re.split(r"(?<!e\.g)(?<!i\.e)(?<!etc)\.\s|;|\n\n|\n[-*] ", text[m.end():],
                         maxsplit=1)[0]
        before = text[:m.start()].rstrip(" `")
        group = before[before.rfind("("):] if before.endswith(")") and "(" in before else ""
        for part in (after, group):
            for tick, quoted in _QUOTED_OR_TICKED.findall(part):
                value = literal(tick or quoted)
                call = _implied(fn, value) if value is not None else None
                if call and not isinstance(ast.literal_eval(value or "0"), bool):
                    out.append(SpecCase(call, error=m.group(1)))
    return out


def _block_cases(block: str, api: Api) -> list[SpecCase]:
    data = json_cases(block, api)
    if data is not None:
        return data
    if re.search(r"^\s*>>> ", block, re.M):
        return _doctest_cases(block, api)
    try:
        tree = ast.parse(block)
    except SyntaxError:
        return _call_cases(block, api, code=True)
    return _script_cases(block, tree, api)


def _comments(block: str) -> dict[int, str]:
    out: dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(block).readline):
            if tok.type == tokenize.COMMENT:
                out[tok.start[0]] = tok.string.lstrip("#").strip()
    except (tokenize.TokenError, SyntaxError):
        pass
    return out


def _script_cases(block: str, tree: ast.Module, api: Api) -> list[SpecCase]:
    """A script: each expression whose result a comment states (on its line or the
    comment lines right after it), each ``assert a == b`` and ``a == b``, checked after
    the statements before it (the example's own state)."""
    comments, lines = _comments(block), block.split("\n")
    out: list[SpecCase] = []
    setup: list[str] = []
    body = tree.body
    for i, stmt in enumerate(body):
        src = ast.get_source_segment(block, stmt) or ""
        end = stmt.end_lineno or stmt.lineno
        upto = body[i + 1].lineno if i + 1 < len(body) else len(lines) + 1
        said = [comments[end]] if end in comments else []
        for row in range(end + 1, upto):
            if row in comments and lines[row - 1].lstrip().startswith("#"):
                said.append(comments[row])
            elif lines[row - 1].strip():
                break
        case = _checked(stmt, " ".join(said), api, tuple(setup))
        if case is not None:
            out.append(case)
        if case is None or case.error is None:
            setup.append(src)
    return [c for c in out if _names_known(c, api)]


def _checked(stmt: ast.stmt, said: str, api: Api, setup: tuple[str, ...]) -> SpecCase | None:
    test = stmt.test if isinstance(stmt, ast.Assert) else (
        stmt.value if isinstance(stmt, ast.Expr) else None)
    if (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq) and isinstance(test.left, ast.Call)):
        return SpecCase(ast.unparse(test.left), expected=ast.unparse(test.comparators[0]),
                        setup=setup)
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and said):
        return None
    call = stmt.value
    name = call.func.id if isinstance(call.func, ast.Name) else None
    fn = api.functions.get(name or "")
    expected, error = stated_result(said, fn.returns if fn else None)
    if expected is None and error is None:
        return None
    return SpecCase(ast.unparse(call), expected=expected, error=error, setup=setup)


def _doctest_cases(block: str, api: Api) -> list[SpecCase]:
    out: list[SpecCase] = []
    setup: list[str] = []
    for source, shown in _doctest_items(block):
        try:
            node = ast.parse(source, mode="eval").body
        except SyntaxError:
            setup.append(source)
            continue
        error = None
        if shown and shown[0].startswith("Traceback"):
            error = re.match(r"\s*(?:\w+\.)*(\w+)", shown[-1])
        expected = literal(" ".join(shown)) if shown and not error else None
        if error is not None:
            out.append(SpecCase(source, error=error.group(1), setup=tuple(setup)))
            continue
        if expected is not None and isinstance(node, ast.Call):
            out.append(SpecCase(source, expected=expected, setup=tuple(setup)))
        setup.append(source)
    return [c for c in out if _names_known(c, api)]


def _doctest_items(block: str) -> Iterator[tuple[str, list[str]]]:
    source: list[str] = []
    shown: list[str] = []
    for line in [*block.split("\n"), ""]:
        text = line.strip()
        if text.startswith(">>> ") or not text:
            if source:
                yield "\n".join(source), shown
            source, shown = ([text[4:]] if text else []), []
        elif text.startswith("... ") and source and not shown:
            source.append(text[4:])
        elif source:
            shown.append(text)


def _names_known(case: SpecCase, api: Api) -> bool:
    """Every name a case uses is the module's, the standard library's, or its own."""
    trees = [ast.parse(s) for s in (*case.setup, case.call, case.expected or "None")]
    bound = {n.id for t in trees for n in ast.walk(t) if isinstance(n, ast.Name)
             and not isinstance(n.ctx, ast.Load)} | {
        a.arg for t in trees for a in ast.walk(t) if isinstance(a, ast.arg)}
    used = {n.id for t in trees for n in ast.walk(t) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)} - bound - BUILTIN_NAMES
    return bool(used) and used <= (api.names | STDLIB) and bool(used & api.names)
