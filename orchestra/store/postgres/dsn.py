"""PostgreSQL connection strings: which ones are, and how to name one without its password."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from orchestra._errors import UserError

SCHEMES = ("postgresql://", "postgres://")
_PASSWORD_PARAM = re.compile(r"(?i)(password=)[^&\s]*")
_LISTEN_PARAM = re.compile(r"(?i)(listen_dsn=)([^&\s]*)")


def is_postgres(url: str) -> bool:
    return url.lower().startswith(SCHEMES)


def redact(dsn: str) -> str:
    """``dsn`` with its passwords (in the user part, a ``password=`` parameter, or the
    ``listen_dsn`` parameter's URL) as ``***``.

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
    query = _LISTEN_PARAM.sub(lambda m: m[1] + quote(redact(unquote(m[2])), safe=":/@*"),
                              _PASSWORD_PARAM.sub(r"\1***", parts.query))
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub(text: str, dsn: str) -> str:
    """``text`` (say, a driver's error message) with any password of ``dsn`` blanked."""
    try:
        parts = urlsplit(dsn)
        passwords = [parts.password, *(urlsplit(unquote(m[2])).password
                                       for m in _LISTEN_PARAM.finditer(parts.query))]
    except ValueError:
        return text
    for password in passwords:
        if password:
            text = text.replace(password, "***")
    return text


POOLERS = ("transaction",)
"""What ``pooler=`` takes: ``transaction`` is PgBouncer's ``pool_mode = transaction``
(or any pooler that may hand each transaction a different server connection)."""
_OURS = ("pooler", "listen_dsn")


@dataclass(frozen=True)
class Options:
    """A store URL split into what asyncpg connects with and orchestra's own parameters."""

    dsn: str
    """The URL without ``pooler`` and ``listen_dsn`` (asyncpg would send them to the
    server as settings)."""
    statement_cache_size: int
    """asyncpg's named prepared statements per connection: 0 behind a transaction pooler,
    where the next statement may run on a server connection that never prepared it."""
    listen_dsn: str | None
    """Where followers ``LISTEN`` (a session connection), or None: they poll instead."""


def options(dsn: str) -> Options:
    """Parse ``?pooler=transaction`` and ``?listen_dsn=URL`` (percent-encoded) off ``dsn``.

    Behind a transaction pooler LISTEN cannot work (the next transaction may run on
    another server connection), so followers LISTEN on ``listen_dsn`` (a direct URL of
    the same database) or, without it, poll.
    """
    parts = urlsplit(dsn)
    kept: list[str] = []
    ours: dict[str, str] = {}
    for item in parts.query.split("&") if parts.query else ():
        key, _, value = item.partition("=")
        if unquote(key) in _OURS:
            ours[unquote(key)] = unquote(value)
        else:
            kept.append(item)
    pooler = ours.get("pooler")
    if pooler is not None and pooler not in POOLERS:
        raise UserError(f"pooler={pooler!r} in the PostgreSQL URL is not known; use "
                        "pooler=transaction behind PgBouncer's pool_mode = transaction "
                        "(or a pooler like it), or leave it out for a direct connection")
    listen = ours.get("listen_dsn")
    if listen is not None and not is_postgres(listen):
        raise UserError("listen_dsn in the PostgreSQL URL is not a postgresql:// URL "
                        "(not shown: it may hold a password); give a direct (not pooled) "
                        "URL of the same database, percent-encoded, or leave it out to poll")
    plain = urlunsplit((*parts[:3], "&".join(kept), parts.fragment))
    if listen is None and pooler is None:
        listen = plain
    return Options(plain, 0 if pooler else 256, listen)
