"""Threads in the SQLite store: the message log, loaded plugins and steps that write them.

Loads read one snapshot (``BEGIN`` ... ``COMMIT``) on the read connection; a step is one
``BEGIN IMMEDIATE`` transaction on the write connection, with its run record and lease
renewal in it too.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence

from oracle_core.store.saving import count_message, encode_messages, to_json
from oracle_core.store.sqlite import leases, runs
from oracle_core.store.sqlite.codec import SURROGATE_ESCAPE, from_json
from oracle_core.store.sqlite.connect import immediate
from oracle_core.store.sqlite.schema import THREAD_TABLES
from oracle_core.store.threads import conflict
from oracle_core.values.messages import Message
from oracle_core.values.text import clean_text
from oracle_core.values.threads import RunRecord, ThreadState, ThreadSummary, ThreadTail
from oracle_core.values.titles import TITLE_SOURCE_CHARS, thread_title, title_source

_LOADED = "SELECT plugin FROM oracle_loaded_plugins WHERE thread_id = ? ORDER BY seq"
_COUNT = "SELECT coalesce(max(seq) + 1, 0) FROM oracle_messages WHERE thread_id = ?"

Row = tuple[int, str, int | None]
"""A message row: its index, its JSON text and its token count (``None``: not counted yet)."""


def load(db: sqlite3.Connection, thread_id: str, busy_timeout: float) -> ThreadState:
    """The whole thread, from one snapshot."""
    db.execute("BEGIN")  # one snapshot: messages, loads and runs from the same step
    try:
        rows = db.execute(
            "SELECT seq, message, tokens FROM oracle_messages WHERE thread_id = ? ORDER BY seq",
            (thread_id,),
        ).fetchall()
        loaded = db.execute(_LOADED, (thread_id,)).fetchall()
        saved_runs = db.execute(
            "SELECT record FROM oracle_runs WHERE thread_id = ? ORDER BY created_at, rowid",
            (thread_id,),
        ).fetchall()
    finally:
        db.execute("COMMIT")
    messages, tokens = _decode(db, thread_id, rows, busy_timeout)
    return ThreadState(
        thread_id,
        messages=messages,
        loaded_plugins=[clean_text(r[0]) for r in loaded],
        runs=runs.records(saved_runs),
        message_tokens=tokens,
    )


def load_tail(
    db: sqlite3.Connection, thread_id: str, since: int, busy_timeout: float
) -> ThreadTail:
    """The thread from message ``since`` on (see ``ThreadStore.load_tail``), from one snapshot."""
    db.execute("BEGIN")  # one snapshot, as in load
    try:
        (count,) = db.execute(_COUNT, (thread_id,)).fetchone()
        with_before = 0 < since <= count
        first = since - 1 if with_before else min(since, count)
        rows = db.execute(
            "SELECT seq, message, tokens FROM oracle_messages WHERE thread_id = ? AND seq >= ? "
            "ORDER BY seq",
            (thread_id, first),
        ).fetchall()
        loaded = db.execute(_LOADED, (thread_id,)).fetchall()
        running = db.execute(
            "SELECT record FROM oracle_runs WHERE thread_id = ? AND status = 'running' "
            "ORDER BY created_at, rowid",
            (thread_id,),
        ).fetchall()
    finally:
        db.execute("COMMIT")
    messages, tokens = _decode(db, thread_id, rows, busy_timeout)
    before = None
    if with_before:  # the row before the tail came along, to check the caller's start
        before, messages, tokens = messages[0], messages[1:], tokens[1:]
    return ThreadTail(
        thread_id=thread_id,
        since=since,
        messages=messages,
        message_tokens=tokens,
        before=before,
        count=count,
        loaded_plugins=[clean_text(r[0]) for r in loaded],
        running=runs.records(running),
    )


def _decode(
    db: sqlite3.Connection, thread_id: str, rows: list[Row], busy_timeout: float
) -> tuple[list[Message], list[int]]:
    """Messages and token counts of rows; rows of an older release are repaired."""
    # One decode of every row at once: far cheaper than a json.loads call per row.
    joined = "[" + ",".join(text for _, text, _ in rows) + "]"
    messages: list[Message] = json.loads(joined)
    tokens: list[int] = [count for _, _, count in rows]  # type: ignore[misc]
    repairs: list[tuple[str, int, str, int]] = []
    if None in tokens or SURROGATE_ESCAPE.search(joined):  # rows of an older release
        for index, (seq, text, count) in enumerate(rows):
            message, fixed = from_json(text)
            if count is None or fixed is not None:
                messages[index], tokens[index] = message, count_message(message)
                repairs.append((fixed or text, tokens[index], thread_id, seq))
    if repairs:
        _repair(db, repairs, busy_timeout)
    return messages, tokens


def _repair(
    db: sqlite3.Connection, repairs: list[tuple[str, int, str, int]], busy_timeout: float
) -> None:
    """Write back rows of an older release, cleaned and counted, if the lock is free now.

    Messages never change once saved, so this is safe at any time; when another writer
    holds the lock it is simply left for a later load (which waits for no one).
    """
    db.execute("PRAGMA busy_timeout = 0")
    try:
        with immediate(db):
            db.executemany(
                "UPDATE oracle_messages SET message = ?, tokens = ? WHERE thread_id = ? AND seq = ?",
                repairs,
            )
    except sqlite3.OperationalError:
        pass  # locked by another writer: counted again next time
    finally:
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")


def append(
    db: sqlite3.Connection,
    thread_id: str,
    now: float,
    *,
    base: int,
    messages: Sequence[Message],
    loaded: Sequence[str],
    run: RunRecord | None,
    lease: str | None,
    tokens: Sequence[int] | None,
    also: Callable[[], None] | None = None,
) -> list[str]:
    """Save one step in one transaction (see ``ThreadStore.append``); the merged loads.

    ``also`` runs inside that transaction, after the step (the step's usage rows)."""
    # Clean and count before taking the write lock, so the lock is held briefly.
    rows = list(zip(*encode_messages(messages, tokens), strict=True))
    plugins = [clean_text(p) for p in loaded]
    record = None if run is None else to_json(run.to_json())
    with immediate(db):
        db.execute(
            "INSERT INTO oracle_threads VALUES (?, ?, ?) "
            "ON CONFLICT (thread_id) DO UPDATE SET updated_at = excluded.updated_at",
            (thread_id, now, now),
        )
        if rows:
            (count,) = db.execute(_COUNT, (thread_id,)).fetchone()
            if count != base:
                raise conflict(thread_id, base, count)
            db.executemany(
                "INSERT INTO oracle_messages (thread_id, seq, message, tokens) VALUES (?, ?, ?, ?)",
                [(thread_id, base + i, text, n) for i, (text, n) in enumerate(rows)],
            )
        for plugin in plugins:
            db.execute(
                "INSERT OR IGNORE INTO oracle_loaded_plugins SELECT ?, ?, "
                "coalesce(max(seq), -1) + 1 FROM oracle_loaded_plugins WHERE thread_id = ?",
                (thread_id, plugin, thread_id),
            )
        if record is not None:
            runs.save(db, thread_id, record)
        if lease is not None:
            leases.renew(db, thread_id, clean_text(lease), now)
        if also is not None:
            also()
        merged = db.execute(_LOADED, (thread_id,)).fetchall()
    return [r[0] for r in merged]


def listing(db: sqlite3.Connection) -> list[str]:
    """Every thread id, most recently updated first."""
    rows = db.execute("SELECT thread_id FROM oracle_threads ORDER BY updated_at DESC").fetchall()
    return [r[0] for r in rows]


_TITLE_SOURCE = rf"""
CASE WHEN instr(m.message, '\u0000') THEN NULL ELSE CASE json_type(m.message, '$.content')
   WHEN 'text' THEN substr(json_extract(m.message, '$.content'), 1, {TITLE_SOURCE_CHARS})
   WHEN 'array' THEN (
     SELECT substr(group_concat(CASE json_extract(p.value, '$.type')
       WHEN 'text' THEN coalesce(json_extract(p.value, '$.text'), '')
       WHEN 'image_url' THEN '[image]' END,
       ' '), 1, {TITLE_SOURCE_CHARS})
     FROM json_each(m.message, '$.content') p)
   ELSE '' END END,
CASE WHEN instr(m.message, '\u0000') THEN m.message END"""
"""Of a thread's first user message (``m``): the text its title is made from (at most
TITLE_SOURCE_CHARS), or, when it holds the escape of a NUL (SQLite's JSON functions end a
string at a NUL), the message itself, for Python to read."""


def summaries(db: sqlite3.Connection, limit: int | None) -> list[ThreadSummary]:
    """The threads with their times, sizes and titles, most recently updated first."""
    rows = db.execute(
        "SELECT s.*,"
        f" {_TITLE_SOURCE}"
        " FROM (SELECT t.thread_id, t.created_at, t.updated_at,"
        "  (SELECT count(*) FROM oracle_messages m WHERE m.thread_id = t.thread_id),"
        "  (SELECT coalesce(sum(m.tokens), 0) FROM oracle_messages m"
        "   WHERE m.thread_id = t.thread_id),"
        "  (SELECT count(*) FROM oracle_runs r WHERE r.thread_id = t.thread_id),"
        "  (SELECT m.seq FROM oracle_messages m WHERE m.thread_id = t.thread_id"
        "   AND json_extract(m.message, '$.role') = 'user' ORDER BY m.seq LIMIT 1) AS first"
        "  FROM oracle_threads t ORDER BY t.updated_at DESC LIMIT ?) s"
        " LEFT JOIN oracle_messages m ON m.thread_id = s.thread_id AND m.seq = s.first"
        " ORDER BY s.updated_at DESC",
        (limit or -1,),
    ).fetchall()
    return [
        ThreadSummary(
            row[0], row[1], row[2], messages=row[3], tokens=row[4], runs=row[5],
            title=_title(row[7], row[8]),
        )
        for row in rows
    ]  # fmt: skip


def _title(source: str | None, message: str | None) -> str:
    if message is not None:
        source = title_source(from_json(message)[0].get("content"))
    return thread_title(source or "")


def delete(db: sqlite3.Connection, thread_id: str) -> bool:
    """Remove the thread and every row kept for it, in one transaction; whether it existed."""
    with immediate(db):
        found = db.execute("DELETE FROM oracle_threads WHERE thread_id = ?", (thread_id,)).rowcount
        for table in THREAD_TABLES:
            db.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
    return found > 0
