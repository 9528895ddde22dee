"""A program that ends without closing a store still exits.

aiosqlite (>= 0.22) runs each connection on a non-daemon thread that stops only when the
connection is closed or stopped; the interpreter waits for such threads before it exits.
A script that opens a store and ends without ``await store.close()`` (or ``async with``)
therefore never exited. Here a daemon thread waits for the main thread to end (the
moment the interpreter starts waiting for the others), then for the thread that opened
each store still open, and stops that store's connections through aiosqlite's public
``Connection.stop()``: SQLite closes them, rolling back a transaction left unfinished.
Everything committed stays (the store survives a killed process the same way), and one
line on stderr says which store was left open.

The registry is process-wide on purpose: it answers a process-wide event (the
interpreter's exit), like ``atexit`` (which runs too late: after the threads are joined).
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable, Iterable

import aiosqlite


class LeftOpen:
    """The aiosqlite connections of stores not closed yet, and the watcher that stops them
    once the program has ended (see the module's docstring)."""

    def __init__(self, write: Callable[[str], object] | None = None) -> None:
        self._lock = threading.Lock()
        self._open: weakref.WeakKeyDictionary[aiosqlite.Connection,
                                              tuple[str, threading.Thread]] = (
            weakref.WeakKeyDictionary())
        self._write = write or _to_stderr
        self._watcher: threading.Thread | None = None

    def opened(self, label: str, connections: Iterable[aiosqlite.Connection]) -> None:
        """Track ``connections`` (of the store ``label`` names) until :meth:`closed`.

        Held weakly: a store dropped unclosed is collected as before (aiosqlite then
        stops its thread itself)."""
        opener = threading.current_thread()
        with self._lock:
            for db in connections:
                self._open[db] = (label, opener)
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, daemon=True,
                                                 name="orchestra-left-open")
                self._watcher.start()

    def closed(self, connections: Iterable[aiosqlite.Connection]) -> None:
        with self._lock:
            for db in connections:
                self._open.pop(db, None)

    def stop_all(self) -> list[str]:
        """Stop every connection still open (those opened on a thread other than the
        main one once that thread has ended); the labels of their stores, each once, in
        the order they were opened. Called on a thread without an event loop (aiosqlite
        then settles no future)."""
        with self._lock:
            left = list(self._open.items())
            self._open.clear()
        labels: list[str] = []
        for db, (label, opener) in left:
            if opener is not threading.main_thread() and opener.is_alive():
                opener.join()  # another thread may still be using its store
            db.stop()
            if label not in labels:
                labels.append(label)
        return labels

    def _watch(self) -> None:
        threading.main_thread().join()
        labels = self.stop_all()
        if labels:
            self._write(warning(labels))


def warning(labels: list[str]) -> str:
    """The one line that says which stores were left open, and what to do instead."""
    which = ("a store was left open" if len(labels) == 1
             else f"{len(labels)} stores were left open")
    return (f"orchestra: {which} ({', '.join(labels)}); its connections were stopped so the "
            "program could exit (committed writes are kept). Close a store with `async "
            "with` or `await store.close()`\n")


def _to_stderr(text: str) -> None:
    sys.stderr.write(text)  # sys.stderr as it is then (a test may have replaced it)
    sys.stderr.flush()


LEFT_OPEN = LeftOpen()
"""The process's guard (the interpreter's exit is one event per process)."""
