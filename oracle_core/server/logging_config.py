"""Where ``oracle serve`` logs go: all of them to standard error, one format.

uvicorn configures only its own loggers, and sends its access log to standard output; the
oracle's own (``oracle_core.*``: runs, tools, plugins, stores) would then have no handler,
so Python printed their warnings bare and dropped the rest. This configuration sends the
oracle's records at the chosen level, everything else's warnings, uvicorn's messages and its
access log to standard error (standard output carries only the start-up banner), each line
naming its logger.
"""

from __future__ import annotations

import copy
from typing import Any

from uvicorn.config import LOGGING_CONFIG

__all__ = ["server_log_config"]

_FORMAT = "%(levelprefix)s %(name)s: %(message)s"


def server_log_config(log_level: str = "info") -> dict[str, Any]:
    """The ``logging.config.dictConfig`` of ``oracle serve`` at ``log_level``.

    Args:
        log_level: uvicorn's level name (``critical`` ... ``debug``, ``trace``); it sets the
            oracle's loggers too (``trace`` is ``DEBUG`` there).
    """
    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    config["formatters"]["named"] = {"()": "uvicorn.logging.DefaultFormatter", "fmt": _FORMAT}
    config["handlers"]["named"] = {
        "formatter": "named",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    level = "DEBUG" if log_level.lower() == "trace" else log_level.upper()
    config["loggers"]["oracle_core"] = {"handlers": ["named"], "level": level, "propagate": False}
    # Plugins and libraries log under their own names: their warnings are shown, not their chatter.
    config["root"] = {"handlers": ["named"], "level": "WARNING"}
    return config
