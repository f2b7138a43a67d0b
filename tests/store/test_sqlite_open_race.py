"""Connections opening one new SQLite file at the same moment all open it.

Two processes sharing a file (oracle serve twice, a CLI beside a server) open it together
the first time; switching the new file to WAL answered "database is locked" at once to the
loser, without SQLite's busy handler.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest

from oracle_core.store.sqlite.connect import connect_sqlite


@pytest.mark.parametrize("seed", range(6))
def test_every_connection_opening_a_new_file_together_gets_it_in_wal_mode(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    openers = rng.randint(4, 12)
    for round_ in range(10):
        path = tmp_path / f"round{round_}" / "oracle.db"
        start = threading.Barrier(openers)
        modes: list[str] = []
        failures: list[BaseException] = []

        def open_it(
            path: Path = path,
            start: threading.Barrier = start,
            modes: list[str] = modes,
            failures: list[BaseException] = failures,
        ) -> None:
            start.wait()
            try:
                db = connect_sqlite(path, schema="CREATE TABLE IF NOT EXISTS t (x)")
            except BaseException as error:  # what a second process would have seen
                failures.append(error)
                return
            modes.append(str(db.execute("PRAGMA journal_mode").fetchone()[0]))
            db.close()

        threads = [threading.Thread(target=open_it) for _ in range(openers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert failures == []
        assert modes == ["wal"] * openers
