"""SQLite helpers that plugins use to keep their own tables in the oracle's database."""

from __future__ import annotations

from pathlib import Path

from oracle_core import SQLiteStore, connect_sqlite


class Notes(SQLiteStore):
    schema = "CREATE TABLE IF NOT EXISTS notes_items (text TEXT);"

    def add(self, text: str) -> None:
        with self.lock:
            self.connection().execute("INSERT INTO notes_items VALUES (?)", (text,))

    def all(self) -> list[str]:
        with self.lock:
            return [r[0] for r in self.connection().execute("SELECT text FROM notes_items")]


def test_connect_sqlite_creates_the_folder_runs_the_schema_and_uses_wal(tmp_path: Path) -> None:
    db = connect_sqlite(tmp_path / "deep" / "oracle.db", schema="CREATE TABLE t (x);")

    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("t",)]


def test_a_store_opens_lazily_and_reopens_after_close(tmp_path: Path) -> None:
    notes = Notes(tmp_path / "oracle.db")
    assert not notes.is_open
    assert not (tmp_path / "oracle.db").exists()

    notes.add("one")
    notes.close()
    notes.add("two")

    assert notes.all() == ["one", "two"]
    assert Notes(tmp_path / "oracle.db").all() == ["one", "two"]
