"""What a log line is about: the HTTP request and the run it was written for.

Three context variables hold the ids: the server sets :data:`REQUEST_ID` for each request
(:mod:`oracle_core.server.request_id`), and :class:`~oracle_core.telemetry.run_log.RunLog`
sets :data:`RUN_ID` and :data:`THREAD_ID` when a run starts, in the task that works it. A
task started from there (a tool call, a model call) copies them, as asyncio copies every
context variable, and so does a worker thread started with :func:`asyncio.to_thread`.

:class:`LogContextFilter` puts them on every record a handler emits (``record.request_id``,
``record.run_id``, ``record.thread_id``; ``None`` when unset), where the formatters of
``oracle serve`` (:mod:`oracle_core.server.log_formats`) or an application's own read them.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar

REQUEST_ID: ContextVar[str | None] = ContextVar("oracle_request_id", default=None)
"""The id of the HTTP request being handled (``X-Request-ID``), else ``None``."""

RUN_ID: ContextVar[str | None] = ContextVar("oracle_run_id", default=None)
"""The id of the run being worked, else ``None``."""

THREAD_ID: ContextVar[str | None] = ContextVar("oracle_thread_id", default=None)
"""The thread of the run being worked, else ``None``."""

CONTEXT_FIELDS = ("request_id", "run_id", "thread_id")
"""The record attributes :class:`LogContextFilter` sets, in the order lines show them."""


class LogContextFilter(logging.Filter):
    """Adds the current request, run and thread ids to each record; never drops one.

    A record that already carries one of the attributes (given as ``extra=``) keeps it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Set ``request_id``, ``run_id`` and ``thread_id`` on ``record``; always ``True``."""
        for name, variable in zip(CONTEXT_FIELDS, (REQUEST_ID, RUN_ID, THREAD_ID), strict=True):
            if getattr(record, name, None) is None:
                setattr(record, name, variable.get())
        return True


__all__ = ["CONTEXT_FIELDS", "REQUEST_ID", "RUN_ID", "THREAD_ID", "LogContextFilter"]
