"""The operator's settings of the memory plugin: ``[plugins.memory]`` in ``oracle.toml``.

``mode = "tools"`` (the default) gives the model four memory tools and a Tier-1 entry;
``mode = "auto"`` gives it none: the plugin's middleware recalls and captures memories
itself, and the plugin is silent. Every key may also be set in the environment
(``ORACLE_PLUGIN_MEMORY__MODE=auto``), where values are strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Mode = Literal["tools", "auto"]
"""``tools``: the model saves and searches with tools; ``auto``: the middleware does it."""

MODES: tuple[Mode, ...] = ("tools", "auto")

DEFAULT_RECALL_TOKENS = 300
"""Tokens the recalled-memory block may cost per model call (o200k_base)."""

DEFAULT_RECALL_LIMIT = 8
"""Memories searched for a message; the block keeps the best that fit the budget."""

_KEYS = ("mode", "recall_tokens", "recall_limit", "capture")


@dataclass(frozen=True)
class MemoryConfig:
    """What the operator chose for the memory plugin.

    Attributes:
        mode: ``tools`` (default) or ``auto``.
        recall_tokens: in auto mode, the most tokens the recalled block may cost (16-4000).
        recall_limit: in auto mode, the most memories recalled for one message (1-50).
        capture: in auto mode, save the durable facts a user states (default ``True``).
    """

    mode: Mode = "tools"
    recall_tokens: int = DEFAULT_RECALL_TOKENS
    recall_limit: int = DEFAULT_RECALL_LIMIT
    capture: bool = True

    @property
    def auto(self) -> bool:
        """Whether the plugin works without tools."""
        return self.mode == "auto"

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | Any) -> MemoryConfig:
        """Read ``[plugins.memory]`` (a dict, or a config object with the same attributes).

        Raises:
            ValueError: naming the key, what was found and what fits.
        """
        values = dict(raw) if isinstance(raw, Mapping) else dict(getattr(raw, "__dict__", {}))
        unknown = sorted(k for k in values if k not in _KEYS)
        if unknown:
            raise ValueError(
                f"[plugins.memory] has unknown key(s) {', '.join(map(repr, unknown))}; "
                f"the keys are {', '.join(_KEYS)}"
            )
        mode = str(values.get("mode", "tools")).strip().lower()
        if mode not in MODES:
            raise ValueError(
                f"[plugins.memory] mode = {_shown(values.get('mode'))} is not a mode: "
                'use mode = "tools" (memory tools for the model) or mode = "auto" (no tools)'
            )
        return cls(
            mode="auto" if mode == "auto" else "tools",
            recall_tokens=_number(values, "recall_tokens", DEFAULT_RECALL_TOKENS, 16, 4000),
            recall_limit=_number(values, "recall_limit", DEFAULT_RECALL_LIMIT, 1, 50),
            capture=_flag(values, "capture", True),
        )


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _number(values: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    raw = values.get(key, default)
    try:
        if isinstance(raw, bool):
            raise ValueError
        number = int(str(raw).strip()) if not isinstance(raw, int) else raw
    except ValueError:
        number = None
    if number is None or not low <= number <= high:
        raise ValueError(
            f"[plugins.memory] {key} = {_shown(raw)} must be a whole number from {low} to "
            f"{high} (default {default})"
        )
    return number


def _flag(values: Mapping[str, Any], key: str, default: bool) -> bool:
    raw = values.get(key, default)
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"[plugins.memory] {key} = {_shown(raw)} must be true or false")
