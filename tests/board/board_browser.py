"""Headless Chromium from Debian's ``chromium`` package, driven by Playwright's Python
API (never ``playwright install``: nothing is downloaded), against a real server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("ORCHESTRA_CHROMIUM") or shutil.which("chromium") or \
    "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS = Path(os.environ.get("ORCHESTRA_SCREENSHOTS", "")) if \
    os.environ.get("ORCHESTRA_SCREENSHOTS") else None


def need_browser() -> None:
    """Skip, naming what to install, when the browser or its driver is missing."""
    if not Path(CHROMIUM).exists():
        pytest.skip("needs Debian's chromium package: apt-get install -y chromium "
                    "(or set ORCHESTRA_CHROMIUM to a Chromium binary)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("needs the playwright Python package: pip install -e '.[dev]'")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    need_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


class Watched:
    """A page whose console errors and uncaught exceptions are collected."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(f"console: {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))

    def shot(self, name: str, tmp: Path) -> Path:
        path = (SHOTS or tmp) / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path), full_page=False)
        return path

    def seqs(self) -> list[int]:
        found: list[int] = self.page.eval_on_selector_all(
            "#events li[data-seq]", "els => els.map(e => Number(e.dataset.seq))")
        return found


def open_page(browser: Any, base_url: str, token: str | None) -> Watched:
    context = browser.new_context(base_url=base_url, viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    watched = Watched(page)
    if token is not None:
        page.goto("/")
        page.fill("#token", token)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base_url}/")
    return watched
