"""How one test failed, read from pytest's report, said in one line: a small coder told
only what a failed spec example should be kept its bug for eight rounds, so the example
is said with what the module did instead and the module line that did it.
"""

from __future__ import annotations

import re

__all__ = ["how_it_failed"]

_SECTION = re.compile(r"^_{3,} (\w+) _{3,}$", re.MULTILINE)
_END = re.compile(r"^={3,} ", re.MULTILINE)
_WHERE = re.compile(r"^([\w./-]+\.py):(\d+): \w")


def how_it_failed(output: str, test: str) -> str:
    """``test``'s failure in one line: pytest's first ``E`` line and the module's line that
    raised it; ``''`` when the report does not show the test's section."""
    heads = list(_SECTION.finditer(output))
    for i, head in enumerate(heads):
        if head.group(1) != test:
            continue
        end = heads[i + 1].start() if i + 1 < len(heads) else len(output)
        body = _END.split(output[head.end():end], 1)[0].splitlines()
        errors = [line[1:].strip() for line in body if line.startswith("E ") and line[1:].strip()]
        said = errors[0][:200] if errors else ""
        for n, line in enumerate(body):
            where = _WHERE.match(line)
            if where and not re.match(r"(.*/)?test_|(.*/)?conftest", where.group(1)):
                marked = [b[1:].strip() for b in body[:n] if b.startswith(">")]
                code = f": `{marked[-1]}`" if marked else ""
                return f"{said} (raised at {where.group(1)} line {where.group(2)}{code})"
        return said
    return ""
