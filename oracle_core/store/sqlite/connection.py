"""The SQLite store's two connections to its file, each on a worker thread of its own."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from oracle_core.store.sqlite.connect import connect_sqlite
from oracle_core.store.sqlite.schema import open_store_file

T = TypeVar("T")


class Connections:
    """A write connection and a read connection to one file, used off the event loop.

    Every call of :meth:`write` runs on one worker thread, in the order made, so a loop
    stays responsive while another process holds SQLite's write lock. Reads have a
    connection and a thread of their own: in WAL mode they never wait for a writer, so a
    save queued behind another process's lock holds up no read. The file is opened (and
    created, or migrated) by the first call. A call whose caller is cancelled still
    finishes on its worker.

    Args:
        path: the database file.
        busy_timeout: seconds to wait for another process's write lock.
    """

    def __init__(self, path: Path, busy_timeout: float) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._closed = False
        self._worker = ThreadPoolExecutor(1, thread_name_prefix=f"oracle-sqlite-{path.name}")
        self._read_lock = threading.Lock()
        self._reader_db: sqlite3.Connection | None = None
        self._reader = ThreadPoolExecutor(1, thread_name_prefix=f"oracle-sqlite-read-{path.name}")

    def writer(self) -> sqlite3.Connection:
        """The write connection, opened now if needed (shared with the worker thread)."""
        with self._lock:
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        """The write connection, opened now if needed; call it holding ``_lock``."""
        if self._closed:
            raise RuntimeError(f"{self.path} is closed")
        if self._db is None:
            self._db = open_store_file(self.path, self.busy_timeout)
        return self._db

    async def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` with the write connection on the worker thread."""

        def run() -> T:
            with self._lock:
                return work(self._connect())

        if self._closed:
            raise RuntimeError(f"{self.path} is closed")
        return await asyncio.get_running_loop().run_in_executor(self._worker, run)

    async def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` with the read connection on the read thread."""

        def run() -> T:
            with self._read_lock:
                if self._closed:
                    raise RuntimeError(f"{self.path} is closed")
                if self._reader_db is None:
                    with self._lock:  # the file exists and is migrated before it is read
                        self._connect()
                    self._reader_db = connect_sqlite(self.path, busy_timeout=self.busy_timeout)
                return work(self._reader_db)

        if self._closed:
            raise RuntimeError(f"{self.path} is closed")
        return await asyncio.get_running_loop().run_in_executor(self._reader, run)

    async def close(self) -> None:
        """Close both connections, after every call already made. Safe to call twice."""
        if self._closed:
            return

        def shut() -> None:
            with self._lock:
                self._closed = True
                if self._db is not None:
                    self._db.close()
                    self._db = None

        def shut_reader() -> None:
            with self._read_lock:
                if self._reader_db is not None:
                    self._reader_db.close()
                    self._reader_db = None

        await asyncio.get_running_loop().run_in_executor(self._worker, shut)
        await asyncio.get_running_loop().run_in_executor(self._reader, shut_reader)
        self._worker.shutdown(wait=False)
        self._reader.shutdown(wait=False)
