"""``python other_user.py WARM_DB ARGS...``: ``orchestra ARGS`` as the user ``nobody``.

Run as root: the command runs once on ``WARM_DB`` (a copy root owns: every module the
command imports lazily is loaded while root can still read the interpreter's files),
then the process drops to ``nobody`` for good and runs the command for real. Its exit
code is the command's."""

from __future__ import annotations

import contextlib
import io
import os
import pwd
import sys

from orchestra.cli.main import main


def _swap_db(argv: list[str], db: str) -> list[str]:
    out = list(argv)
    out[out.index("--db") + 1] = db
    return out


if __name__ == "__main__":
    warm, argv = sys.argv[1], sys.argv[2:]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(_swap_db(argv, warm))
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)
    sys.exit(main(argv))
