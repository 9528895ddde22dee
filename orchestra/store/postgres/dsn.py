"""PostgreSQL connection strings: which ones are, and how to name one without its password."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

SCHEMES = ("postgresql://", "postgres://")
_PASSWORD_PARAM = re.compile(r"(?i)(password=)[^&\s]*")


def is_postgres(url: str) -> bool:
    return url.lower().startswith(SCHEMES)


def redact(dsn: str) -> str:
    """``dsn`` with its password (in the user part or a ``password=`` parameter) as ``***``.

    Every message, log line and event that names a PostgreSQL store uses this: the
    password must never leave the process that was given it.
    """
    try:
        parts = urlsplit(dsn)
    except ValueError:
        return "postgresql://***"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{host}"
    query = _PASSWORD_PARAM.sub(r"\1***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub(text: str, dsn: str) -> str:
    """``text`` (say, a driver's error message) with any password of ``dsn`` blanked."""
    try:
        password = urlsplit(dsn).password
    except ValueError:
        password = None
    if password:
        text = text.replace(password, "***")
    return text
