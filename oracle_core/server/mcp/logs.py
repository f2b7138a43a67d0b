"""``logging/setLevel`` over MCP: what a session's calls log is forwarded to its client.

A client that sets a level (``debug`` ... ``emergency``) gets, with each of its later tool
calls, the log records written while that call ran (by the oracle, its middleware and
async tools, in the call's own task) at or above the level, as ``notifications/message``
sent before the call's result (the oracle's own records included, which ``oracle serve``
keeps from the root logger). Records of other sessions' calls never reach it: a record
is taken only in the context of the call that set up the capture. Sync tools run on worker
threads, outside that context, so their records are not forwarded. Records a logger's own
level filters out are never made, so a client asking for ``debug`` gets what the operator's
logging configuration lets through.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator
from typing import Any

MCP_LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": 25,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": 60,
    "emergency": 70,
}
"""The MCP log levels (RFC 5424) as Python logging levels."""

MAX_RECORDS = 50
"""Records forwarded with one call (the rest are counted in a last line)."""

_CAPTURE: contextvars.ContextVar[_Capture | None] = contextvars.ContextVar(
    "oracle_mcp_log_capture", default=None
)


def mcp_level(levelno: int) -> str:
    """The MCP level of a Python logging level (the highest MCP level at or below it)."""
    name = "debug"
    for level, number in MCP_LEVELS.items():
        if levelno >= number:
            name = level
    return name


class _Capture:
    """The records of one call, at or above its session's level."""

    def __init__(self, level: int) -> None:
        self.level = level
        self.records: list[logging.LogRecord] = []
        self.dropped = 0


class _Handler(logging.Handler):
    """Takes the records logged in the context of its own call (one handler per call)."""

    def __init__(self, capture: _Capture) -> None:
        super().__init__()
        self.capture = capture

    def emit(self, record: logging.LogRecord) -> None:
        capture = self.capture
        # Every call's handler sees every record: each takes only its own call's.
        if _CAPTURE.get() is not capture or record.levelno < capture.level:
            return
        if any(r is record for r in capture.records):
            return  # seen by the oracle's logger and again by the root logger
        if len(capture.records) < MAX_RECORDS:
            capture.records.append(record)
        else:
            capture.dropped += 1


@contextlib.contextmanager
def captured(level: str | None) -> Iterator[list[dict[str, Any]]]:
    """Capture what the block logs at or above ``level`` (``None``: nothing).

    Yields a list that, once the block ends, holds the records as the params of
    ``notifications/message`` (``level``, ``logger``, ``data``).
    """
    messages: list[dict[str, Any]] = []
    if level is None:
        yield messages
        return
    capture = _Capture(MCP_LEVELS[level])
    handler = _Handler(capture)
    # `oracle serve` keeps the oracle's own records from the root logger (propagate off):
    # the handler listens to both.
    loggers = [logging.getLogger(), logging.getLogger("oracle_core")]
    token = _CAPTURE.set(capture)
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield messages
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
        _CAPTURE.reset(token)
        for record in capture.records:
            messages.append(
                {
                    "level": mcp_level(record.levelno),
                    "logger": record.name,
                    "data": record.getMessage(),
                }
            )
        if capture.dropped:
            messages.append(
                {"level": "notice", "logger": "oracle", "data": f"{capture.dropped} more records"}
            )
