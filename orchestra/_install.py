"""The distribution's name on the package index, and the install hints that name it.

The import names are ``orchestra`` and ``agents``; the distribution is not called
``orchestra`` because that name on the public index is an unrelated project, and a
hint naming it would install someone else's package.
"""

from __future__ import annotations

DISTRIBUTION = "orchestra-agents"
"""``[project] name`` in pyproject.toml (a test keeps the two equal)."""


def install_hint(extra: str) -> str:
    """How to add an extra: from a checkout (the README's way), or by the index name."""
    return (f"pip install -e '.[{extra}]' in an orchestra checkout, or "
            f"pip install '{DISTRIBUTION}[{extra}]'")
