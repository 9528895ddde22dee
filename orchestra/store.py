"""The blackboard: the store protocols, their SQLite implementation, and the write bundles
(``Writes``, ``Lease``, ``StepResult``) the runtime commits with. Most programs need only
``SQLiteBlackboard`` and ``NewTask``/``NewHandoff``/``NewNote``, importable from ``orchestra``.

The public names are those of ``orchestra._store`` (its ``__all__``), listed once there.
"""

from orchestra._store import *  # noqa: F403
from orchestra._store import __all__ as __all__
