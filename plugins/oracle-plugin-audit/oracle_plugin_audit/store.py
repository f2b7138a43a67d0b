"""The audit trail: tables ``audit_model_calls`` and ``audit_tool_calls`` in the oracle's file.

Rows are written when a call finishes and never changed. ``started_at`` (wall clock) orders
a thread's calls; ``latency_ms`` is measured with :func:`time.perf_counter`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from oracle_core import SQLiteStore

SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_model_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    model TEXT NOT NULL,
    tools TEXT NOT NULL,
    tool_calls TEXT NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_ms REAL NOT NULL,
    error TEXT,
    started_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_model_calls_by_thread
    ON audit_model_calls (thread_id, started_at);
CREATE TABLE IF NOT EXISTS audit_tool_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    refused INTEGER NOT NULL,
    is_error INTEGER NOT NULL,
    error TEXT,
    latency_ms REAL NOT NULL,
    started_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_tool_calls_by_thread ON audit_tool_calls (thread_id, started_at);
"""

_MODEL_COLUMNS = (
    "id, thread_id, run_id, step, model, tools, tool_calls, prompt_tokens, completion_tokens, "
    "latency_ms, error, started_at"
)
_COUNTS = (
    "model_calls",
    "model_errors",
    "prompt_tokens",
    "completion_tokens",
    "tool_calls",
    "refusals",
    "tool_errors",
)
"""The numbers :meth:`AuditStore.summary` gives per thread and in total."""
_TOOL_COLUMNS = (
    "id, thread_id, run_id, call_id, name, arguments, refused, is_error, error, latency_ms, "
    "started_at"
)


def _arguments(text: str) -> Any:
    """Arguments as the model wrote them: decoded when they are JSON, else the raw text."""
    try:
        return json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return text


def _time(started_at: float) -> str:
    return datetime.fromtimestamp(started_at, UTC).isoformat(timespec="milliseconds")


def _model_call(row: Sequence[Any]) -> dict[str, Any]:
    calls = json.loads(row[6])
    return {
        "kind": "model_call",
        "id": row[0],
        "thread_id": row[1],
        "run_id": row[2],
        "step": row[3],
        "model": row[4],
        "tools": json.loads(row[5]),
        "tool_calls": [{"name": c["name"], "arguments": _arguments(c["arguments"])} for c in calls],
        "prompt_tokens": row[7],
        "completion_tokens": row[8],
        "latency_ms": round(row[9], 3),
        "error": row[10],
        "started_at": _time(row[11]),
    }


def _tool_call(row: Sequence[Any]) -> dict[str, Any]:
    return {
        "kind": "tool_call",
        "id": row[0],
        "thread_id": row[1],
        "run_id": row[2],
        "call_id": row[3],
        "name": row[4],
        "arguments": _arguments(row[5]),
        "refused": bool(row[6]),
        "is_error": bool(row[7]),
        "error": row[8],
        "latency_ms": round(row[9], 3),
        "started_at": _time(row[10]),
    }


class AuditStore(SQLiteStore):
    """The audit trail of one oracle, in its SQLite file.

    The connection opens on first use (creating the tables if needed); :meth:`close` closes
    it and a later use opens it again. Writes are single short inserts made inline.

    Args:
        path: the SQLite file (``$ORACLE_HOME/oracle.db``); created with its folder if missing.
        busy_timeout: seconds to wait for another connection's write lock.
    """

    schema = SCHEMA

    def __init__(self, path: str | Path, *, busy_timeout: float = 5.0) -> None:
        super().__init__(path, busy_timeout=busy_timeout)

    def _rows(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        with self.lock:
            return self.connection().execute(sql, parameters).fetchall()

    def _insert(self, table: str, values: dict[str, Any]) -> None:
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        with self.lock:
            self.connection().execute(
                f"INSERT INTO {table} ({columns}) VALUES ({marks})", tuple(values.values())
            )

    def record_model_call(
        self,
        *,
        thread_id: str,
        run_id: str,
        step: int,
        model: str,
        tools: Sequence[str],
        tool_calls: Sequence[dict[str, str]],
        prompt_tokens: int | None,
        completion_tokens: int | None,
        latency_ms: float,
        error: str | None,
        started_at: float,
    ) -> None:
        """Record one finished (or failed) model call.

        Args:
            thread_id: the thread.
            run_id: the run.
            step: the run's step (1 for its first model call).
            model: the model string.
            tools: the names of the tools shown to the model.
            tool_calls: the calls the model asked for, ``{"name", "arguments"}`` (raw text).
            prompt_tokens: tokens of the prompt (``None`` when the call failed).
            completion_tokens: tokens of the answer (``None`` when the call failed).
            latency_ms: how long the call took.
            error: why it failed, if it did.
            started_at: when it started (seconds since the epoch).
        """
        self._insert(
            "audit_model_calls",
            {
                "thread_id": thread_id,
                "run_id": run_id,
                "step": step,
                "model": model,
                "tools": json.dumps(list(tools)),
                "tool_calls": json.dumps(list(tool_calls), ensure_ascii=False),
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "latency_ms": latency_ms,
                "error": error,
                "started_at": started_at,
            },
        )

    def record_tool_call(
        self,
        *,
        thread_id: str,
        run_id: str,
        call_id: str,
        name: str,
        arguments: str,
        refused: bool,
        is_error: bool,
        error: str | None,
        latency_ms: float,
        started_at: float,
    ) -> None:
        """Record one tool call the model asked for, refused or run.

        Args:
            thread_id: the thread.
            run_id: the run.
            call_id: the provider's id of the call.
            name: the tool name the model used.
            arguments: the arguments as the model wrote them.
            refused: the capability gate refused to run it.
            is_error: it failed (refused, bad arguments, the tool raised, timed out).
            error: the error the model read, if any.
            latency_ms: how long it took.
            started_at: when it started (seconds since the epoch).
        """
        self._insert(
            "audit_tool_calls",
            {
                "thread_id": thread_id,
                "run_id": run_id,
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
                "refused": int(refused),
                "is_error": int(is_error),
                "error": error,
                "latency_ms": latency_ms,
                "started_at": started_at,
            },
        )

    def model_calls(self, thread_id: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """Model calls, newest first, of one thread or of all."""
        where, parameters = ("WHERE thread_id = ?", [thread_id]) if thread_id else ("", [])
        rows = self._rows(
            f"SELECT {_MODEL_COLUMNS} FROM audit_model_calls {where} "
            "ORDER BY started_at DESC, id DESC LIMIT ?",
            [*parameters, limit],
        )
        return [_model_call(r) for r in rows]

    def tool_calls(
        self, thread_id: str | None = None, refused: bool | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        """Tool calls, newest first, of one thread or of all, optionally only (not) refused."""
        clauses: list[str] = []
        parameters: list[Any] = []
        if thread_id:
            clauses.append("thread_id = ?")
            parameters.append(thread_id)
        if refused is not None:
            clauses.append("refused = ?")
            parameters.append(int(refused))
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._rows(
            f"SELECT {_TOOL_COLUMNS} FROM audit_tool_calls {where} "
            "ORDER BY started_at DESC, id DESC LIMIT ?",
            [*parameters, limit],
        )
        return [_tool_call(r) for r in rows]

    def thread(self, thread_id: str) -> list[dict[str, Any]]:
        """Every model call and tool call of ``thread_id``, in the order they started."""
        model = self._rows(
            f"SELECT {_MODEL_COLUMNS} FROM audit_model_calls WHERE thread_id = ?", [thread_id]
        )
        tools = self._rows(
            f"SELECT {_TOOL_COLUMNS} FROM audit_tool_calls WHERE thread_id = ?", [thread_id]
        )
        # A model call starts before the tool calls it asked for; ties keep that order.
        timeline = [(r[11], 0, r[0], _model_call(r)) for r in model]
        timeline += [(r[10], 1, r[0], _tool_call(r)) for r in tools]
        return [entry for *_, entry in sorted(timeline, key=lambda item: item[:3])]

    def summary(self) -> dict[str, Any]:
        """Per thread and in total: calls, refusals, errors and tokens."""
        threads: dict[str, dict[str, Any]] = {}

        def entry(thread_id: str) -> dict[str, Any]:
            return threads.setdefault(
                thread_id,
                {
                    "thread_id": thread_id,
                    "model_calls": 0,
                    "model_errors": 0,
                    "prompt_tokens": 0,
                    "completion_tokens": 0,
                    "tool_calls": 0,
                    "refusals": 0,
                    "tool_errors": 0,
                    "last_at": 0.0,
                },
            )

        for thread_id, calls, errors, prompt, completion, last in self._rows(
            "SELECT thread_id, count(*), count(error), total(prompt_tokens), "
            "total(completion_tokens), max(started_at) FROM audit_model_calls GROUP BY thread_id"
        ):
            entry(thread_id).update(
                model_calls=calls,
                model_errors=errors,
                prompt_tokens=int(prompt),
                completion_tokens=int(completion),
                last_at=last,
            )
        for thread_id, calls, refusals, errors, last in self._rows(
            "SELECT thread_id, count(*), total(refused), total(is_error AND NOT refused), "
            "max(started_at) "
            "FROM audit_tool_calls GROUP BY thread_id"
        ):
            item = entry(thread_id)
            item.update(tool_calls=calls, refusals=int(refusals), tool_errors=int(errors))
            item["last_at"] = max(item["last_at"], last)
        ordered = sorted(threads.values(), key=lambda t: -t["last_at"])
        totals = {key: sum(t[key] for t in ordered) for key in _COUNTS}
        for item in ordered:
            item["last_at"] = _time(item["last_at"])
        return {"threads": ordered, "totals": {"threads": len(ordered), **totals}}
