"""The CLI's exit codes: what ``orchestra``'s status tells a script (``$?``).

A module of its own so that every command module returns them without importing the
entry point (``main``) that imports the commands.
"""

EXIT_OK = 0
"""Done: the run completed, or the command did what it was asked."""
EXIT_FAILED = 1
"""The run failed (or orchestra met an error of its own)."""
EXIT_USAGE = 2
"""The command line or the input was wrong; the message says what to change."""
EXIT_STORE = 3
"""The store cannot be used: not a store, a newer schema, or not writable."""
EXIT_WAITING = 4
"""The run waits for a human's approval."""
EXIT_CANCELLED = 5
"""The run was cancelled."""
EXIT_PAUSED = 6
"""The run was paused by a usage cap (resumable with a higher cap)."""
EXIT_SERVER = 7
"""``--server``: the server could not be reached or refused the request."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT), the shell's convention."""
