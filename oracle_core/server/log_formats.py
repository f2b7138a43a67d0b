"""How ``oracle serve`` writes a log record: a text line or a JSON object (``--log-format``).

Both start from the same facts: the time (ISO 8601, to the millisecond, with the UTC offset),
the level, the logger, the message, and the request, run and thread the line was written
for (:class:`~oracle_core.telemetry.log_context.LogContextFilter` puts them on the record).

- ``text``: ``2026-05-01T09:14:03.512+00:00 INFO    oracle_core.runs: run ... request_id=...
  run_id=... thread_id=...``, the ids only when set; a traceback follows on its own lines.
- ``json``: one object a line, ``{"time", "level", "logger", "message", ...}``, with the ids,
  every ``extra=`` field a record carries (the finished-run line's ``status``,
  ``duration_seconds``, tokens), an access line's ``client``, ``method``, ``path``,
  ``http_version`` and ``status``, and ``exception`` (the traceback's text) when there is one.

uvicorn's general logger, ``uvicorn.error``, is shown as ``uvicorn``: it carries every
message of the server, not only errors.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any, Literal

from oracle_core.telemetry.log_context import CONTEXT_FIELDS

LogFormat = Literal["text", "json"]
"""The formats ``oracle serve --log-format`` (``ORACLE_LOG_FORMAT``) accepts."""

LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")
"""Every :data:`LogFormat`, the default first."""

_STANDARD = frozenset(
    # "color_message": uvicorn's coloured twin of its message
    [
        *logging.LogRecord("", 0, "", 0, "", None, None).__dict__,
        "message",
        "asctime",
        "color_message",
    ]
)
_ACCESS_FIELDS = ("client", "method", "path", "http_version", "status")


def _time(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created).astimezone().isoformat(timespec="milliseconds")


def _logger(record: logging.LogRecord) -> str:
    return "uvicorn" if record.name == "uvicorn.error" else record.name


class TextFormatter(logging.Formatter):
    """A line: time, level, logger, message, then the ids that are set as ``key=value``."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line (and its traceback below it, if any)."""
        ids = "".join(
            f" {name}={value}"
            for name in CONTEXT_FIELDS
            if (value := getattr(record, name, None)) is not None
        )
        line = (
            f"{_time(record)} {record.levelname:<7} {_logger(record)}: {record.getMessage()}{ids}"
        )
        extra = self._details(record)
        return f"{line}\n{extra}" if extra else line

    def _details(self, record: logging.LogRecord) -> str:
        parts = []
        if record.exc_info:
            parts.append(self.formatException(record.exc_info))
        elif record.exc_text:
            parts.append(record.exc_text)
        if record.stack_info:
            parts.append(self.formatStack(record.stack_info))
        return "\n".join(parts)


class JsonFormatter(TextFormatter):
    """A JSON object a line (see the module's docs for its fields)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON; values JSON cannot hold are written as text."""
        entry: dict[str, Any] = {
            "time": _time(record),
            "level": record.levelname,
            "logger": _logger(record),
            "message": record.getMessage(),
        }
        if record.name == "uvicorn.access" and isinstance(record.args, tuple):
            entry.update(zip(_ACCESS_FIELDS, record.args, strict=False))
        for name, value in record.__dict__.items():
            if name not in _STANDARD and value is not None:
                entry.setdefault(name, value)
        details = self._details(record)
        if details:
            entry["exception"] = details
        return json.dumps(entry, default=str, ensure_ascii=False)


__all__ = ["LOG_FORMATS", "JsonFormatter", "LogFormat", "TextFormatter"]
