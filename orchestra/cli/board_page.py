"""``orchestra board RUN --open``: the URL of the run's live page on ``orchestra serve``
(printed, and opened in a browser when this machine has a display)."""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from urllib.parse import quote

from orchestra._errors import NotFoundError, UserError
from orchestra._install import install_hint
from orchestra.cli.main import EXIT_OK

DEFAULT_SERVER = "http://127.0.0.1:8765"


def open_page(args: argparse.Namespace) -> int:
    """Check the server has the run, print its page's URL, open it if a browser can show it."""
    if not args.open:
        raise UserError("`orchestra board --server URL` shows the run's page: add --open "
                        "(plans, handoffs and notes of a store file: drop --server)")
    base = (args.server or os.environ.get("ORCHESTRA_SERVER") or DEFAULT_SERVER).rstrip("/")
    try:
        from orchestra.client import ApiError, Client
    except ImportError as exc:
        raise UserError(f"--open needs the server extra: {install_hint('server')} "
                        f"({exc})") from exc
    import httpx

    try:
        with Client(base, token=os.environ.get("ORCHESTRA_TOKEN") or None) as api:
            api.runs.get(args.run)
    except ApiError as exc:
        if exc.status == 404:
            raise NotFoundError(f"{base} has no run {args.run!r}: list its runs with "
                                f"`orchestra runs --server {base}`") from exc
        if exc.status != 401:  # a token-protected board: the page asks for a login
            raise UserError(f"{base}: {exc.detail}") from exc
    except httpx.TransportError as exc:
        raise UserError(f"no orchestra serve answers at {base} ({exc}): start one with "
                        "`orchestra serve --db FILE`, or pass --server URL") from exc
    url = f"{base}/runs/{quote(args.run, safe='')}"
    print(url)
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or \
            sys.platform in ("darwin", "win32"):
        webbrowser.open(url)
    return EXIT_OK
