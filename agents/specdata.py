"""Examples a spec gives as data: markdown tables of inputs and outputs (a column per
parameter and one headed by the call, a table of bad inputs under a sentence about
errors, an input/output pair of columns), and lists of cases in JSON (objects naming the
function, its arguments and its result or error).

A cell is a value when it is a literal that fits the parameter's type, or the cell's
text for a ``str`` parameter; a JSON value is converted to the type the signature
states (a JSON list for a ``tuple``). Anything else leaves the row out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from agents.specread import ERROR_NAME, Api, Function, SpecCase, fits, literal, stated_result

__all__ = ["json_cases", "table_cases"]

_ERROR = ERROR_NAME


def _cells(line: str) -> list[str]:
    parts = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [p.strip().replace("\\|", "|") for p in parts]


def _unticked(cell: str) -> str:
    return cell[1:-1] if len(cell) > 1 and cell[0] == cell[-1] == "`" else cell


def _tables(text: str) -> Iterator[tuple[str, list[str], list[list[str]]]]:
    """(the text before it, header, rows) of each markdown table."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) - 1:
        sep = lines[i + 1].strip()
        if lines[i].strip().startswith("|") and re.fullmatch(r"\|?[\s:|-]+\|?", sep) and "-" in sep:
            j = i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                j += 1
            rows = [[_unticked(c) for c in _cells(r)] for r in lines[i + 2:j]]
            yield "\n".join(lines[:i])[-400:], [_unticked(c) for c in _cells(lines[i])], rows
            i = j
        else:
            i += 1


def _cell_value(cell: str, annotation: str | None) -> str | None:
    value = literal(cell)
    if value is not None and fits(value, annotation):
        return value
    if annotation in ("str", "'str'") and cell and "`" not in cell:
        return repr(cell)
    return None


_INPUTS = re.compile(r"(?i)^(?:input|in|argument|arg|given|value|text|string|s|x|n)$")
_OUTPUTS = re.compile(r"(?i)^(?:output|out|result|returns?|expected|gives|→|->)$")


def table_cases(text: str, api: Api) -> list[SpecCase]:
    out: list[SpecCase] = []
    errors = list(dict.fromkeys(re.findall(_ERROR, text)))
    for before, header, rows in _tables(text):
        said = [ln for ln in before.split("\n") if ln.strip()][-2:]
        bad = bool(re.search(r"(?i)invalid|error|raise|reject|malformed|bad", " ".join(said)))
        named = re.findall(_ERROR, " ".join(said))
        error = named[-1] if named else (errors[0] if len(errors) == 1 else None)
        out += _table(header, rows, api, error if bad else None)
    return out


def _table(header: list[str], rows: list[list[str]], api: Api,
           error: str | None) -> list[SpecCase]:
    call_col = next(((i, m) for i, h in enumerate(header)
                     if (m := re.fullmatch(r"([a-z_]\w*)\(([\w\s,]*)\)", h))
                     and m.group(1) in api.functions), None)
    out: list[SpecCase] = []
    if call_col is not None:
        col, m = call_col
        fn = api.functions[m.group(1)]
        params = [p.strip() for p in m.group(2).split(",") if p.strip()]
        cols = [header.index(p) if p in header else -1 for p in params]
        if -1 in cols:
            return []
        for row in rows:
            if len(row) != len(header):
                continue
            args = [_cell_value(row[c], fn.annotation(p))
                    for c, p in zip(cols, params, strict=True)]
            expected, error = stated_result(row[col], fn.returns)
            if expected is None and error is None:
                expected = _cell_value(row[col], fn.returns)
            if None not in args and (expected is not None or error is not None):
                out.append(SpecCase(f"{fn.name}({', '.join(a for a in args if a)})",
                                    expected=expected, error=error))
        return out
    for i, h in enumerate(header):
        owners = [f for f in api.functions.values() if f.required == [h]]
        if len(owners) == 1 and error:
            fn = owners[0]
            for row in rows:
                value = _cell_value(row[i], fn.annotation(h)) if len(row) > i else None
                if value is not None:
                    out.append(SpecCase(f"{fn.name}({value})", error=error))
            return out
    if len(header) == 2 and len(api.functions) == 1 and _INPUTS.match(header[0]) and \
            _OUTPUTS.match(header[1]):
        fn = next(iter(api.functions.values()))
        if len(fn.required) == 1:
            for row in rows:
                arg = _cell_value(row[0], fn.annotation(fn.required[0])) if row else None
                expected, error = (stated_result(row[1], fn.returns) if len(row) > 1
                                   else (None, None))
                if arg is not None and (expected is not None or error is not None):
                    out.append(SpecCase(f"{fn.name}({arg})", expected=expected, error=error))
    return out


_NAME_KEYS = ("call", "function", "fn", "func", "name", "method")
_ARG_KEYS = ("args", "arguments", "input", "inputs", "params", "parameters", "kwargs")
_RESULT_KEYS = ("result", "expected", "output", "returns", "return", "want", "value")
_ERROR_KEYS = ("raises", "error", "exception", "throws")


def _as(value: Any, annotation: str | None) -> Any:
    """A JSON value as the type the signature states (a list for a tuple, recursively
    for the outer type only)."""
    if isinstance(value, list) and annotation and re.match(r"\s*(?:tuple|Tuple)\b",
                                                             annotation):
        return tuple(value)
    return value


def json_cases(block: str, api: Api) -> list[SpecCase] | None:
    """The cases a code block lists as JSON objects (None when it is not such a list)."""
    try:
        data = json.loads(block)
    except ValueError:
        return None
    items = data if isinstance(data, list) else (
        next((v for v in data.values() if isinstance(v, list)), None)
        if isinstance(data, dict) else None)
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    out: list[SpecCase] = []
    for item in items:
        name = next((item[k] for k in _NAME_KEYS if isinstance(item.get(k), str)), None)
        fn = api.functions.get(str(name).split("(")[0].strip()) if name else None
        if fn is None:
            continue
        case = _json_case(fn, item)
        if case is not None:
            out.append(case)
    return out


def _json_case(fn: Function, item: dict[str, Any]) -> SpecCase | None:
    raw: Any = next((item[k] for k in _ARG_KEYS if k in item), [])
    names = [p for p, _, _ in fn.params]
    if isinstance(raw, dict):
        args = [f"{k}={_as(v, fn.annotation(k))!r}" for k, v in raw.items()]
    else:
        values = raw if isinstance(raw, list) else [raw]
        if len(values) > len(names):
            return None
        args = [repr(_as(v, fn.annotation(p))) for v, p in zip(values, names, strict=False)]
    call = f"{fn.name}({', '.join(args)})"
    error = next((item[k] for k in _ERROR_KEYS if isinstance(item.get(k), str)), None)
    if error:
        found = re.search(ERROR_NAME, error)
        return SpecCase(call, error=found.group(1)) if found else None
    key = next((k for k in _RESULT_KEYS if k in item), None)
    if key is None:
        return None
    expected = repr(_as(item[key], fn.returns))
    return SpecCase(call, expected=expected) if literal(expected) else None
