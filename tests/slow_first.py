"""The files with slow tests (children started, killed and waited for) run first.

The suite runs on xdist workers one file each (``--dist loadfile``), handed out in
collection order: a long file collected last runs alone at the end while the other
workers idle. Moved to the front, the long files overlap and the short ones fill the
gaps (longest first is the classic schedule for this). Order inside a file is kept.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)  # stable: the rest keep their order
