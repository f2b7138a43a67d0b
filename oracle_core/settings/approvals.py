"""The ``[approvals]`` table of ``oracle.toml``: calls that wait for a person (docs/waits.md).

Asking for the approval is :mod:`oracle_core.run.waits.approvals`'s; this module only reads
and checks the table::

    [approvals]
    tools = ["files.delete", "send_email"]   # "plugin.tool" or a bare tool name
    deadline = 3600                          # seconds; 0 for none (default one day)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle_core.errors import ApprovalConfigError
from oracle_core.settings.reading import config_error
from oracle_core.settings.unknown import unknown_key

DEFAULT_DEADLINE = 24 * 3600.0
"""Seconds a pending approval waits for a decision before it counts as denied (one day)."""

APPROVAL_KEYS = ("tools", "deadline")
"""The keys ``[approvals]`` takes."""

_KEYS_SAID = 'tools (a list of "plugin.tool" or "tool" names) and deadline (seconds)'


@dataclass(frozen=True)
class ApprovalRules:
    """The operator's approval rules as written in ``[approvals]``.

    Attributes:
        tools: tools whose every call needs approval: ``"plugin.tool"`` or ``"tool"``.
        deadline: seconds a pending approval waits before it counts as denied
            (``None``: no deadline).
    """

    tools: frozenset[str] = frozenset()
    deadline: float | None = DEFAULT_DEADLINE


def approval_rules(section: Any, path: Path) -> ApprovalRules:
    """The rules of an ``[approvals]`` table.

    Args:
        section: the table as read from the file.
        path: the file, for the messages (read again for the line of a bad key).

    Raises:
        ApprovalConfigError: one line naming the file, the line, the key and the fix.
    """
    if not isinstance(section, Mapping):
        raise _error(path, "approvals", "approvals must be a table ([approvals])", "a table")
    for key in section:
        if key not in APPROVAL_KEYS:
            fix = f"its keys are {_KEYS_SAID}"
            raise unknown_key(path, "approvals", key, APPROVAL_KEYS, fix, kind=ApprovalConfigError)
    tools = section.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(t, str) and t.strip() for t in tools):
        raise _error(
            path,
            "approvals.tools",
            '[approvals] tools must be a list of tool names, e.g. tools = ["files.delete"]',
            'a list of "plugin.tool" or "tool" names',
        )
    deadline = section.get("deadline", DEFAULT_DEADLINE)
    if (
        isinstance(deadline, bool)
        or not isinstance(deadline, int | float)
        or not math.isfinite(deadline)
        or deadline < 0
    ):
        raise _error(
            path,
            "approvals.deadline",
            f"[approvals] deadline must be a number of seconds (0 for none), not {deadline!r}",
            "a number of seconds at least 0",
        )
    return ApprovalRules(frozenset(tools), float(deadline) or None)


def read_approvals(path: Path, data: Mapping[str, Any]) -> ApprovalRules:
    """The ``[approvals]`` of ``oracle.toml`` at ``path``, read as ``data``.

    Raises:
        ApprovalConfigError: see :func:`approval_rules`.
    """
    return approval_rules(data.get("approvals", {}), path)


def _error(path: Path, key: str, problem: str, expected: str) -> ApprovalConfigError:
    return config_error(path, key, problem, expected, kind=ApprovalConfigError)
