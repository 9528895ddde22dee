"""Starts an MCP server so that it dies with the worker that started it (Linux).

Run as ``python -I -S _launch.py PARENT_PID COMMAND ARGS...``: it asks the kernel to
SIGKILL it when its parent dies (``PR_SET_PDEATHSIG``, kept across ``exec``), checks
the parent did not die meanwhile, then becomes the server (``exec``). So even a worker
killed with ``kill -9`` leaves no server behind.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main() -> None:
    parent = int(sys.argv[1])
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if os.getppid() != parent:
        os._exit(1)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as exc:
        print(f"cannot start {sys.argv[2]!r}: {exc}", file=sys.stderr)
        os._exit(127)


if __name__ == "__main__":
    main()
