"""Workspace confinement, on real files in tmp_path."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from agents.workspace import Workspace, WorkspaceError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace holding a file an agent must never touch."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("do not read")
    return path


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root, max_file_bytes=1024)


def _names(directory: Path, pattern: str = "*") -> list[str]:
    return sorted(p.name for p in directory.glob(pattern))


# -- path confinement ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "reason"),
    [
        ("../outside/secret.txt", "'..'"),
        ("a/../../outside/secret.txt", "'..'"),
        ("a/../b.txt", "'..'"),
        ("/etc/passwd", "absolute"),
        ("", "empty"),
        ("   ", "empty"),
        ("a\x00b.txt", "NUL"),
    ],
)
async def test_unsafe_paths_are_rejected_everywhere(ws: Workspace, rel: str, reason: str) -> None:
    with pytest.raises(WorkspaceError, match=reason):
        ws.resolve(rel)
    with pytest.raises(WorkspaceError, match=reason):
        await ws.read_file(rel)
    with pytest.raises(WorkspaceError, match=reason):
        await ws.write_file(rel, "x")


async def test_symlinked_file_pointing_outside_is_refused(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await ws.read_file("link.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await ws.write_file("link.txt", "overwritten")
    assert (outside / "secret.txt").read_text() == "do not read"
    assert ws.existing_files() == []


async def test_symlinked_directory_pointing_outside_is_refused(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "src").mkdir()
    (root / "src" / "escape").symlink_to(outside, target_is_directory=True)
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await ws.read_file("src/escape/secret.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await ws.write_file("src/escape/new/planted.py", "x = 1")
    assert _names(outside) == ["secret.txt"]
    assert ws.existing_files() == []


async def test_symlinks_that_stay_inside_are_followed(ws: Workspace, root: Path) -> None:
    (root / "real.txt").write_text("hello")
    (root / "alias.txt").symlink_to(root / "real.txt")
    assert await ws.read_file("alias.txt") == "hello"
    assert (root / "real.txt").read_text() == "hello"


def test_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="not a directory"):
        Workspace(tmp_path / "missing")


# -- reading, writing, listing --------------------------------------------------------


async def test_write_then_read_round_trips(ws: Workspace, root: Path) -> None:
    content = "def f() -> str:\n    return 'héllo'\n"
    await ws.write_file("./pkg/sub/mod.py", content)
    assert await ws.read_file("pkg/sub/mod.py") == content
    assert (root / "pkg/sub/mod.py").stat().st_mode & 0o777 == 0o644


async def test_write_is_atomic_and_off_the_event_loop(
    ws: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await ws.write_file("a.txt", "old")
    threads: list[int] = []

    def crash(src: str, dst: Path) -> None:
        threads.append(threading.get_ident())
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        await ws.write_file("a.txt", "new content")
    assert (root / "a.txt").read_text() == "old"
    assert _names(root) == ["a.txt"]  # temp file cleaned up
    assert threads and threads[0] != threading.get_ident()


async def test_size_limits(ws: Workspace, root: Path) -> None:
    (root / "big.txt").write_text("x" * 1025)
    with pytest.raises(WorkspaceError, match="1025 bytes, over the 1024-byte read limit"):
        await ws.read_file("big.txt")
    with pytest.raises(WorkspaceError, match="over the 1024-byte write limit"):
        await ws.write_file("new.txt", "é" * 513)  # 1026 bytes in UTF-8
    assert not (root / "new.txt").exists()
    await ws.write_file("ok.txt", "x" * 1024)
    assert (root / "ok.txt").stat().st_size == 1024


async def test_binary_files_are_refused(ws: Workspace, root: Path) -> None:
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(WorkspaceError, match="binary"):
        await ws.read_file("img.png")
    with pytest.raises(WorkspaceError, match="not UTF-8"):
        await ws.read_file("latin1.txt")


async def test_read_errors_name_the_path(ws: Workspace, root: Path) -> None:
    (root / "d").mkdir()
    with pytest.raises(WorkspaceError, match=r"'missing\.py' does not exist"):
        await ws.read_file("missing.py")
    with pytest.raises(WorkspaceError, match="'d' is a directory"):
        await ws.read_file("d")
    with pytest.raises(WorkspaceError, match="'d' is a directory"):
        await ws.write_file("d", "x")


async def test_listing_is_recursive_sorted_and_skips_caches(ws: Workspace, root: Path) -> None:
    for rel in [
        "b.py", "a/z.py", "a/b/c.py", ".gitignore",
        "__pycache__/b.cpython-311.pyc", "a/__pycache__/z.pyc",
        ".pytest_cache/v/cache", ".git/HEAD", ".venv/lib/site.py",
    ]:  # fmt: skip
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    assert ws.existing_files() == [".gitignore", "a/b/c.py", "a/z.py", "b.py"]
    assert ws.existing_files(shown=2) == [".gitignore", "a/b/c.py"]


# -- running pytest ------------------------------------------------------------------
