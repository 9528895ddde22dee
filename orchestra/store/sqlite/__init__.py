"""The SQLite blackboard: the store protocols on one file (WAL), the default store.

``store.py`` ties the shared facade (``store/facade*.py``, over ``backend.SQLITE``) to
SQLite's own halves (``store_tasks``, ``store_history``, ``store_runs``); every write of
every concern (``tasks``, ``journal``, ``board``, ...) goes through one group-commit
writer."""
