"""Ids given by a unique prefix (``orchestra show 52d2``): one resolver for every command
that takes a run or approval id, local or through ``--server``."""

from __future__ import annotations

from collections.abc import Iterable

from orchestra._errors import NotFoundError, UserError

SHOWN = 5
"""Candidates an ambiguous prefix lists."""


def resolve_prefix(kind: str, ref: str, ids: Iterable[str], *, hint: str = "") -> str:
    """``ref`` if it is one of ``ids``, else the one id it is a prefix of.

    Several matches raise a ``UserError`` listing them; none, a ``NotFoundError``
    (``hint`` says where to look)."""
    known = list(dict.fromkeys(ids))
    if ref in known:
        return ref
    matches = sorted(i for i in known if ref and i.startswith(ref))
    if len(matches) == 1:
        return matches[0]
    if matches:
        more = f" and {len(matches) - SHOWN} more" if len(matches) > SHOWN else ""
        raise UserError(f"{kind} id prefix {ref!r} is ambiguous: it matches "
                        f"{', '.join(matches[:SHOWN])}{more}; give more characters")
    raise NotFoundError(f"no {kind} {ref!r}" + (f"; {hint}" if hint else ""))
