"""The one place oracle-core touches process-wide settings of its dependencies.

Two libraries read environment variables that decide whether they go to the network:
tiktoken (``TIKTOKEN_CACHE_DIR``: where its encoding files are) and litellm
(``LITELLM_LOCAL_MODEL_COST_MAP``: read the price map from the package instead of
downloading it), and litellm has module flags for telemetry and debug output. Nothing in
oracle-core sets any of them at import; :func:`prepare_tokenizer` and
:func:`configure_litellm` do, just before the library is first used. Both are idempotent
and only fill in what the operator left unset (``setdefault``): an operator's own value
always wins.
"""

from __future__ import annotations

import importlib.util
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


def configure_litellm(litellm: Any) -> Any:
    """Quiet, offline litellm: no telemetry, no debug banner; returns the module."""
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


def import_litellm() -> Any:
    """Import litellm with its price map read from the package, never downloaded."""
    os.environ.setdefault(OFFLINE_COST_MAP, "True")
    prepare_tokenizer()
    import litellm

    return configure_litellm(litellm)
