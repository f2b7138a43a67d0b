"""The one place oracle-core touches process-wide settings of its dependencies.

Two libraries read environment variables that decide whether they go to the network:
tiktoken (``TIKTOKEN_CACHE_DIR``: where its encoding files are) and litellm
(``LITELLM_LOCAL_MODEL_COST_MAP``: read the price map from the package instead of
downloading it), and litellm has module flags for telemetry and debug output, and loggers.
Nothing in oracle-core sets any of them at import; :func:`prepare_tokenizer` and
:func:`configure_litellm` do, just before the library is first used. Both are idempotent
and only fill in what the operator left unset (``setdefault``): an operator's own value
always wins.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path
from typing import Any

OFFLINE_COST_MAP = "LITELLM_LOCAL_MODEL_COST_MAP"
"""litellm reads its price map from the package when this is ``True`` (never downloads)."""

TIKTOKEN_CACHE = "TIKTOKEN_CACHE_DIR"
"""tiktoken looks here for its encoding files before it would download them."""


def litellm_tokenizers_dir() -> Path | None:
    """The folder of tiktoken encoding files that litellm ships, without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return folder if folder.is_dir() else None


def prepare_tokenizer() -> None:
    """Point tiktoken at litellm's shipped encodings, unless ``TIKTOKEN_CACHE_DIR`` is set."""
    if TIKTOKEN_CACHE not in os.environ:
        folder = litellm_tokenizers_dir()
        if folder is not None:
            os.environ.setdefault(TIKTOKEN_CACHE, str(folder))


LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
"""litellm's loggers; :func:`configure_litellm` sets them to ``WARNING`` unless told otherwise."""


def configure_litellm(litellm: Any) -> Any:
    """Quiet, offline litellm; returns the module.

    What it sets, and why each loses nothing a user relies on (``bench/model_path.py``
    measured each of litellm 1.110's switches per call, interleaved with the openai SDK):

    - ``telemetry = False``: nothing is sent anywhere.
    - ``suppress_debug_info = True``: no "Give Feedback / Get Help" banner on errors.
    - litellm's loggers at ``WARNING`` when ``LITELLM_LOG`` is unset and the logger has no
      level of its own: an application that logs at ``INFO`` would otherwise print a line
      per model call. ``LITELLM_LOG=INFO`` (or a level set in code) still wins.

    Left as litellm ships them, because they save no measurable CPU (within noise) and each
    would take something from a user who registered litellm callbacks of their own:
    ``turn_off_message_logging`` (callbacks would lose the messages),
    ``disable_streaming_logging`` (callbacks would lose streamed calls), and the callback
    lists (already empty unless the user filled them). litellm 1.110 has no switch for its
    per-call cost calculation (about a fifth of its CPU); the direct path
    (:class:`~oracle_core.models.openai.OpenAIModel`) is how ``openai/`` models avoid it.
    """
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    if "LITELLM_LOG" not in os.environ:
        for name in LITELLM_LOGGERS:
            logger = logging.getLogger(name)
            if logger.level == logging.NOTSET:
                logger.setLevel(logging.WARNING)
    return litellm


def import_litellm() -> Any:
    """Import litellm with its price map read from the package, never downloaded."""
    os.environ.setdefault(OFFLINE_COST_MAP, "True")
    prepare_tokenizer()
    import litellm

    return configure_litellm(litellm)


CHATTY_LOGGERS = ("bm25s",)
"""Libraries that set their own logger to ``DEBUG`` when imported (bm25s does): their
records would pass any handler, whatever level the application chose."""


def _chatter(record: logging.LogRecord) -> bool:
    """Let a record of a chatty library through: a warning or worse, or any record while
    the operator asked for the oracle's debug logs (``oracle_core`` at ``DEBUG``)."""
    return record.levelno >= logging.WARNING or logging.getLogger("oracle_core").isEnabledFor(
        logging.DEBUG
    )


def quiet_chatty_loggers() -> None:
    """Keep :data:`CHATTY_LOGGERS` below ``WARNING`` out of the output unless the operator
    asked for debug logs. A filter, not a level: the library sets its level again when it
    is imported, later. Idempotent; the ``oracle`` command calls it before any command."""
    for name in CHATTY_LOGGERS:
        logger = logging.getLogger(name)
        if _chatter not in logger.filters:
            logger.addFilter(_chatter)
