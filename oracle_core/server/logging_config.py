"""Where ``oracle serve`` logs go: all of them to standard error, in one format.

uvicorn configures only its own loggers, and sends its access log to standard output; the
oracle's own (``oracle_core.*``: runs, tools, plugins, stores) would then have no handler,
so Python printed their warnings bare and dropped the rest. This configuration sends the
oracle's records at the chosen level, everything else's warnings, uvicorn's messages and its
access log to standard error (standard output carries only the start-up banner), each as a
line of text or JSON (:mod:`oracle_core.server.log_formats`) with its time, level, logger
and the request, run and thread it was written for.
"""

from __future__ import annotations

from typing import Any

from oracle_core.server.log_formats import LogFormat

__all__ = ["server_log_config"]

_FORMATTERS = {
    "text": "oracle_core.server.log_formats.TextFormatter",
    "json": "oracle_core.server.log_formats.JsonFormatter",
}


def server_log_config(log_level: str = "info", log_format: LogFormat = "text") -> dict[str, Any]:
    """The ``logging.config.dictConfig`` of ``oracle serve`` at ``log_level``.

    Args:
        log_level: uvicorn's level name (``critical`` ... ``debug``, ``trace``); it sets the
            oracle's loggers too (``trace`` is ``DEBUG`` there).
        log_format: ``text`` (a line a record) or ``json`` (an object a line).

    Raises:
        ValueError: ``log_format`` is neither ``text`` nor ``json``.
    """
    if log_format not in _FORMATTERS:
        raise ValueError(f"log format {log_format!r} is not one of: text, json")
    level = "DEBUG" if log_level.lower() == "trace" else log_level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": "oracle_core.telemetry.log_context.LogContextFilter"}},
        "formatters": {"oracle": {"()": _FORMATTERS[log_format]}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "oracle",
                "filters": ["context"],
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {
            # uvicorn.Config sets these two to --log-level after applying this configuration.
            "uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
            "uvicorn.access": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
            "oracle_core": {"handlers": ["stderr"], "level": level, "propagate": False},
        },
        # Plugins and libraries log under their own names: their warnings are shown, not their chatter.
        "root": {"handlers": ["stderr"], "level": "WARNING"},
    }
