"""Examples a spec states in unambiguous forms: code blocks (a script whose results are
given in comments, ``assert``/``==`` lines, doctest ``>>>`` sessions, a listing that is
not Python), calls with their results in running text (``f(x) == y``, ``f(x) -> y``,
``f(x) => y``, ``f(x) raises E``), and markdown tables of inputs and outputs.

A case is kept only when every value is a literal the spec writes, fitting the
signature's types, with nothing saying "or"; a sentence's meaning is left to running code.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator

from agents.checks import parsed, parsed_expr
from agents.specdata import table_cases
from agents.specread import (
    ERROR_NAME,
    STDLIB,
    Api,
    SpecCase,
    calls_in,
    free_names,
    literal,
    stated_result,
)

__all__ = ["stated_cases"]

_FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.S | re.M)
_VERB = re.compile(r"[`\s]*(==|->|→|=>|⇒|#)[`\s]*")
_RAISES = re.compile(r"[`\s]*\b(?:raises?|throws?)\b[`\s]*" + ERROR_NAME)


def stated_cases(section: str, api: Api) -> list[SpecCase]:
    """The examples ``section`` (a module's part of a spec) states, by every rule here."""
    cases: list[SpecCase] = []
    prose = _FENCE.sub("\n\n", section)
    for block in _FENCE.findall(section):
        cases += _block_cases(block, api)
    cases += table_cases(prose, api)
    text = "\n".join(line for line in prose.split("\n") if not line.lstrip().startswith("|"))
    cases += _call_cases(text, api, code=False)
    return list(dict.fromkeys(cases))


def _expected(after: str, returns: str | None, code: bool) -> tuple[str | None, str | None]:
    """(expected literal, error) stated at the start of ``after`` (the text after a call)."""
    raised = _RAISES.match(after)
    if raised:
        return None, raised.group(1)
    verb = _VERB.match(after)
    if not verb or (verb.group(1) == "#" and not code):
        return None, None
    return stated_result(after[verb.end():], returns)


def _call_cases(text: str, api: Api, *, code: bool) -> list[SpecCase]:
    out = []
    for call, _, end in calls_in(text, sorted(api.functions)):
        fn = api.functions[call.split("(")[0]]
        expected, error = _expected(text[end:end + 800], fn.returns, code)
        if expected is not None or error is not None:
            out.append(SpecCase(call, expected=expected, error=error))
    return out


def _block_cases(block: str, api: Api) -> list[SpecCase]:
    if re.search(r"^\s*>>> ", block, re.M):
        return _doctest_cases(block, api)
    if (tree := parsed(block)) is None:
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
    """A script's checks (a result in a comment, ``a == b``), after the statements before."""
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
        if (node := parsed_expr(source)) is None:
            setup.append(source)
            continue
        error = (re.match(r"\s*(?:\w+\.)*(\w+)", shown[-1])
                 if shown and shown[0].startswith("Traceback") else None)
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
        text = "" if line.lstrip().startswith(('"""', "'''")) else line.strip()  # a docstring's end
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
    used = free_names(case)
    return bool(used) and used <= (api.names | STDLIB) and bool(used & api.names)
