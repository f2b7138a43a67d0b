"""Which store an oracle opens: Postgres when a database URL is set, else SQLite."""

from __future__ import annotations

from pathlib import Path

from oracle_core.store.base import Checkpointer


def open_store(url: str | None, path: Path, *, pool_size: int = 10) -> Checkpointer:
    """The store for ``ORACLE_DATABASE_URL`` (``url``), or the SQLite file at ``path``.

    Opening is lazy: no connection is made and no file touched until the first call.

    Raises:
        ImportError: when ``url`` is set and psycopg is not installed (names the extra).
    """
    if url:
        try:
            from oracle_core.store.postgres import PostgresCheckpointer
        except ImportError as error:
            raise ImportError(
                f"ORACLE_DATABASE_URL is set but the Postgres store cannot be imported ({error}):"
                " pip install 'oracle-core-runtime[postgres]'"
            ) from error
        return PostgresCheckpointer(url, pool_size=pool_size)
    from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer

    return SQLiteCheckpointer(path)
