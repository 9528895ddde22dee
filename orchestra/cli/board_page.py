"""``orchestra board RUN --open``: the URL of the run's live page on ``orchestra serve``
(printed, and opened in a browser when this machine has a display)."""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from urllib.parse import quote

from orchestra._errors import ServerError, UserError
from orchestra._ids import resolve_prefix
from orchestra._install import install_hint
from orchestra.cli.exit_codes import EXIT_OK
from orchestra.cli.remote import all_runs
from orchestra.cli.server_errors import API_ROUTE_MISSING, server_url, translated

DEFAULT_SERVER = "http://127.0.0.1:8765"


def open_page(args: argparse.Namespace) -> int:
    """Check the server has the run, print its page's URL, open it if a browser can show it."""
    if not args.open:
        raise UserError("`orchestra board --server URL` shows the run's page: add --open "
                        "(plans, handoffs and notes of a store file: drop --server)")
    base = server_url(args.server or os.environ.get("ORCHESTRA_SERVER") or DEFAULT_SERVER)
    try:
        from orchestra.client import ApiError, Client
    except ImportError as exc:
        raise UserError(f"--open needs the server extra: {install_hint('server')} "
                        f"({exc})") from exc
    try:
        with Client(base, token=os.environ.get("ORCHESTRA_TOKEN") or None) as api, \
                translated(base):
            try:
                api.runs.get(args.run)
            except ApiError as exc:
                if exc.status != 404 or not exc.problem or exc.detail == API_ROUTE_MISSING:
                    raise
                args.run = resolve_prefix(  # a unique prefix, as everywhere
                    "run", args.run, [r["id"] for r in all_runs(api)],
                    hint=f"{base} lists its runs with `orchestra runs --server {base}`")
    except ServerError as exc:
        if exc.status != 401:  # a protected board: its page asks for a login
            raise
    url = f"{base}/runs/{quote(args.run, safe='')}"
    print(url)
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or \
            sys.platform in ("darwin", "win32"):
        webbrowser.open(url)
    return EXIT_OK
