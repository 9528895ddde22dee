"""File access confined to one workspace directory.

Paths come from a model, so each must be relative, must not climb out with ``..``, and
its real path (through every symlink) must stay inside the root; file I/O runs in a
worker thread so a slow disk never stalls the event loop. The guard is aimed at a model
that asks for the wrong path, not at a local attacker racing symlinks against the open.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path, PurePosixPath

__all__ = ["DEFAULT_MAX_FILE_BYTES", "Workspace", "WorkspaceError"]

DEFAULT_MAX_FILE_BYTES = 256 * 1024

# Directories that hold tool caches or VCS data, never files an agent should edit.
_SKIPPED_DIRS = frozenset({"__pycache__", ".pytest_cache", ".git", "node_modules"})


class WorkspaceError(ValueError):
    """A path or file was refused; the message names the path and what to do instead."""


class Workspace:
    """A directory an agent may read and write, and nothing outside it."""

    def __init__(self, root: Path | str, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        real_root = Path(os.path.realpath(root))
        if not real_root.is_dir():
            raise WorkspaceError(
                f"workspace root {str(root)!r} is not a directory; create it before use"
            )
        if max_file_bytes < 1:
            raise WorkspaceError(f"max_file_bytes must be positive, got {max_file_bytes}")
        self.root = real_root
        """The workspace directory, with symlinks already resolved."""
        self.max_file_bytes = max_file_bytes
        """Largest file, in bytes, that ``read_file`` returns or ``write_file`` accepts."""

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    # -- path confinement ---------------------------------------------------------

    def resolve(self, rel: str) -> Path:
        """The real path of ``rel`` inside the root (its existing part resolved through
        symlinks before the containment check), or raise ``WorkspaceError``."""
        pure = self._parse(rel)
        real = Path(os.path.realpath(self.root.joinpath(*pure.parts)))
        if real != self.root and not real.is_relative_to(self.root):
            raise WorkspaceError(
                f"path {rel!r} resolves (through a symlink) to {str(real)!r}, outside the "
                f"workspace; use a path to a real file inside the workspace"
            )
        return real

    def _parse(self, rel: str) -> PurePosixPath:
        """Reject path strings that are unsafe before touching the file system."""
        if not isinstance(rel, str):
            raise WorkspaceError(f"path must be a string, got {type(rel).__name__}")
        if not rel.strip():
            raise WorkspaceError("path is empty; give a path relative to the workspace root")
        if "\x00" in rel:
            raise WorkspaceError(f"path {rel!r} contains a NUL byte; remove it")
        pure = PurePosixPath(rel)
        if pure.is_absolute():
            raise WorkspaceError(
                f"path {rel!r} is absolute; give a path relative to the workspace root"
            )
        if ".." in pure.parts:
            raise WorkspaceError(
                f"path {rel!r} contains '..'; give a path that stays inside the workspace"
            )
        return pure

    # -- public operations ----------------------------------------------------------

    async def read_file(self, rel: str) -> str:
        """The UTF-8 text of a file, refusing files over the size limit and binaries."""
        return await asyncio.to_thread(self._read_file_sync, rel)

    async def write_file(self, rel: str, content: str) -> None:
        """Atomically replace (or create) a file: readers see the old or the new one."""
        return await asyncio.to_thread(self._write_file_sync, rel, content)

    # -- blocking implementations ----------------------------------------------------

    def existing_files(self, shown: int = 50) -> list[str]:
        """The first ``shown`` of the workspace's files, sorted (blocking: for a pipeline's
        setup), without cache or hidden directories and symlinks that lead outside."""
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            # Pruning in place stops os.walk from descending; symlinked directories
            # are never descended because followlinks defaults to False.
            dirnames[:] = [d for d in dirnames if d not in _SKIPPED_DIRS and not d.startswith(".")]
            for name in filenames:
                path = Path(dirpath, name)
                if path.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(
                        self.root):
                    continue
                found.append(path.relative_to(self.root).as_posix())
        return sorted(found)[:shown]

    def _read_file_sync(self, rel: str) -> str:
        real = self.resolve(rel)
        try:
            # O_NOFOLLOW: if the name became a symlink after resolve(), refuse to open it.
            # O_NONBLOCK: opening a FIFO must not hang waiting for a writer.
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            raise WorkspaceError(f"file {rel!r} does not exist in the workspace") from None
        except IsADirectoryError:
            raise WorkspaceError(f"{rel!r} is a directory; give a file path to read") from None
        except OSError as exc:
            raise WorkspaceError(f"cannot open {rel!r}: {exc.strerror}") from None
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise WorkspaceError(f"{rel!r} is a directory; give a file path to read")
            if not stat.S_ISREG(info.st_mode):
                raise WorkspaceError(f"{rel!r} is not a regular file; only files can be read")
            # Read one byte past the limit so a file that grew since fstat is still caught.
            data = _read_up_to(fd, self.max_file_bytes + 1)
        finally:
            os.close(fd)
        if len(data) > self.max_file_bytes:
            raise WorkspaceError(
                f"file {rel!r} is {max(info.st_size, len(data))} bytes, over the "
                f"{self.max_file_bytes}-byte read limit; read a smaller file"
            )
        if b"\x00" in data:
            raise WorkspaceError(f"file {rel!r} is binary (contains NUL bytes); only text is read")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WorkspaceError(
                f"file {rel!r} is not UTF-8 text (invalid byte at offset {exc.start}); "
                f"it is probably binary, so it cannot be read as text"
            ) from None

    def _write_file_sync(self, rel: str, content: str) -> None:
        if not isinstance(content, str):
            raise WorkspaceError(
                f"content for {rel!r} must be a string, got {type(content).__name__}"
            )
        data = content.encode("utf-8")
        if len(data) > self.max_file_bytes:
            raise WorkspaceError(
                f"content for {rel!r} is {len(data)} bytes, over the {self.max_file_bytes}-byte "
                f"write limit; split it into smaller files"
            )
        real = self.resolve(rel)
        if real == self.root or real.is_dir():
            raise WorkspaceError(f"{rel!r} is a directory; give a file path to write")
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise WorkspaceError(
                f"cannot create {rel!r}: a parent path is a file, not a directory"
            ) from None
        # Re-check after mkdir: a parent that appeared meanwhile may be a symlink.
        if self.resolve(rel) != real:
            raise WorkspaceError(f"path {rel!r} changed while it was being written; retry")
        # One fixed temp name per target: a write killed before the replace leaves a temp
        # file the re-run reuses, not an orphan with a random name.
        tmp_name = str(real.parent / f".{real.name}.orchestra-tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp_name, flags, 0o644)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp_name, 0o644)  # an umask may have narrowed it
            os.replace(tmp_name, real)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise


def _read_up_to(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 16))):
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
