"""Examples a spec gives as markdown tables (a column per parameter and one headed by the
call, or an input/output pair), read from the header and the cells alone: a cell is a
literal that fits its parameter's type, or a ``str`` parameter's text, or no row.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agents.specread import Api, SpecCase, fits, literal, stated_result

__all__ = ["table_cases"]


def _cells(line: str) -> list[str]:
    parts = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [p.strip().replace("\\|", "|") for p in parts]


def _unticked(cell: str) -> str:
    return cell[1:-1] if len(cell) > 1 and cell[0] == cell[-1] == "`" else cell


def _tables(text: str) -> Iterator[tuple[list[str], list[list[str]]]]:
    """(header, rows) of each markdown table."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) - 1:
        sep = lines[i + 1].strip()
        if lines[i].strip().startswith("|") and re.fullmatch(r"\|?[\s:|-]+\|?", sep) and "-" in sep:
            j = i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                j += 1
            rows = [[_unticked(c) for c in _cells(r)] for r in lines[i + 2:j]]
            yield [_unticked(c) for c in _cells(lines[i])], rows
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
    """The cases the tables of ``text`` state for the functions of ``api``."""
    return [c for header, rows in _tables(text) for c in _table(header, rows, api)]


def _table(header: list[str], rows: list[list[str]], api: Api) -> list[SpecCase]:
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
