"""Examples a spec gives as markdown tables of inputs and outputs (a column per
parameter and one headed by the call, a table of bad inputs under a sentence about
errors, an input/output pair of columns).

A cell is a value when it is a literal that fits the parameter's type, or the cell's
text for a ``str`` parameter. Anything else leaves the row out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agents.specread import ERROR_NAME, Api, SpecCase, fits, literal, stated_result

__all__ = ["table_cases"]



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
    errors = list(dict.fromkeys(re.findall(ERROR_NAME, text)))
    for before, header, rows in _tables(text):
        said = [ln for ln in before.split("\n") if ln.strip()][-2:]
        bad = bool(re.search(r"(?i)invalid|error|raise|reject|malformed|bad", " ".join(said)))
        named = re.findall(ERROR_NAME, " ".join(said))
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
