"""SQLite connections set up the way oracle-core uses them, for the core and for plugins.

Plugins that keep their own tables in the oracle's database (``oracle.settings.database_path``)
open their connection with :func:`connect_sqlite`, so every writer agrees on WAL mode, lock
waiting and transactions.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def connect_sqlite(
    path: str | Path, *, schema: str = "", busy_timeout: float = 30.0
) -> sqlite3.Connection:
    """Open (creating its folder if needed) the SQLite database at ``path``.

    The connection is in autocommit mode (use explicit ``BEGIN IMMEDIATE`` ... ``COMMIT``
    for multi-statement writes), in WAL mode with ``synchronous=NORMAL`` (durable across an
    application crash; readers never block the writer), may be used from any thread (guard
    it with a lock), and waits up to ``busy_timeout`` seconds for another writer's lock.

    Args:
        path: the database file.
        schema: SQL run once after opening (``CREATE TABLE IF NOT EXISTS ...``).
        busy_timeout: seconds to wait for a write lock held by another connection.

    Raises:
        StoreUnavailableError: the file's folder cannot be created, or the file opened
            (naming ``ORACLE_HOME`` and the fix).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(
            path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
    except OSError as error:  # a folder under a file, or one the process may not write
        from oracle_core.store.unavailable import folder_unwritable

        raise folder_unwritable(path, error) from None
    except sqlite3.OperationalError as error:  # "unable to open database file"
        from oracle_core.store.unavailable import folder_unwritable

        raise folder_unwritable(path, OSError(str(error))) from None
    try:
        _wal(db, busy_timeout)
        db.execute("PRAGMA synchronous=NORMAL")
        if schema:
            db.executescript(schema)
    except BaseException:
        db.close()
        raise
    return db


def _wal(db: sqlite3.Connection, busy_timeout: float) -> None:
    """Put ``db`` in WAL mode, waiting up to ``busy_timeout`` seconds for another process.

    Switching the journal mode can answer "database is locked" at once, without SQLite's busy
    handler, while another process opens the same new file: try again until the time is up.
    """
    deadline = time.monotonic() + busy_timeout
    pause = 0.005
    while True:
        try:
            if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


@contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` transaction on ``db``: committed at the end, rolled back on error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


class SQLiteStore:
    """Base class for a plugin's store in a SQLite file (usually the oracle's own).

    One connection, opened on first use with :func:`connect_sqlite` (running :attr:`schema`),
    shared by every thread under :attr:`lock`; :meth:`close` closes it and a later use opens
    it again. Subclasses set ``schema`` and write their queries as::

        with self.lock:
            rows = self.connection().execute("SELECT ...").fetchall()

    Args:
        path: the database file, e.g. ``oracle.settings.database_path``.
        busy_timeout: seconds to wait for another connection's write lock.
    """

    schema: str = ""
    """SQL run when the connection opens (``CREATE TABLE IF NOT EXISTS ...``)."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self.lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    @property
    def is_open(self) -> bool:
        """Whether the connection is open."""
        return self._db is not None

    def connection(self) -> sqlite3.Connection:
        """The open connection, opened now if needed. Hold :attr:`lock` while using it."""
        if self._db is None:
            self._db = connect_sqlite(self.path, schema=self.schema, busy_timeout=self.busy_timeout)
        return self._db

    def close(self) -> None:
        """Close the connection (a later use opens it again)."""
        with self.lock:
            if self._db is not None:
                self._db.close()
                self._db = None
