"""The SQLite blackboard: the store protocols on one file (WAL), the default store.

``store.py`` ties the halves together (``store_tasks``, ``store_board``,
``store_history``, ``store_runs``); each half sends the writes of one concern
(``tasks``, ``journal``, ``board``, ...) through one group-commit writer."""
