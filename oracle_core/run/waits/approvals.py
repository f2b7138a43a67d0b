"""Approvals: which calls wait for a person, and for how long.

Three sources, strongest first:

1. the operator: ``[approvals]`` in ``oracle.toml`` lists tools (``"plugin.tool"`` or a
   bare ``"tool"``) whose every call needs approval, whatever the plugin says;
2. the tool: ``@tool(approval=True)``, ``approval=False``, or a predicate
   ``(arguments, context) -> bool`` over the validated arguments;
3. the plugin: ``PluginManifest(approval=True)``, the default of its tools that say nothing.

A predicate that raises counts as "needs approval": a rule that cannot answer never lets a
call through. A pending approval counts as denied once its deadline passes
(``deadline`` seconds in ``[approvals]``, default one day; ``0`` for none).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oracle_core.errors import ApprovalConfigError
from oracle_core.plugins.registry import BoundTool
from oracle_core.run.calls import PreparedCall, Wait, WaitKind

log = logging.getLogger("oracle_core.run")

DEFAULT_DEADLINE = 24 * 3600.0
"""Seconds a pending approval waits for a decision before it counts as denied (one day)."""


@dataclass(frozen=True)
class ApprovalPolicy:
    """The operator's approval rules (``[approvals]`` in ``oracle.toml``).

    Attributes:
        tools: tools whose calls always need approval: ``"plugin.tool"`` or ``"tool"``.
        deadline: seconds a pending approval waits before it counts as denied
            (``None``: no deadline).
    """

    tools: frozenset[str] = frozenset()
    deadline: float | None = DEFAULT_DEADLINE

    @classmethod
    def from_config(cls, section: Any, source: str = "[approvals]") -> ApprovalPolicy:
        """The policy of an ``[approvals]`` table.

        Raises:
            ApprovalConfigError: naming the key at fault and the fix.
        """
        if not isinstance(section, Mapping):
            raise ApprovalConfigError(f"{source} must be a table, not {type(section).__name__}")
        unknown = sorted(set(section) - {"tools", "deadline"})
        if unknown:
            raise ApprovalConfigError(
                f"{source}: unknown key(s) {unknown}: the keys are tools (a list of "
                '"plugin.tool" or "tool" names) and deadline (seconds)'
            )
        tools = section.get("tools", [])
        if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
            raise ApprovalConfigError(
                f'{source}: tools must be a list of tool names, e.g. tools = ["files.delete"]'
            )
        deadline = section.get("deadline", DEFAULT_DEADLINE)
        if (
            isinstance(deadline, bool)
            or not isinstance(deadline, int | float)
            or not math.isfinite(deadline)
            or deadline < 0
        ):
            raise ApprovalConfigError(
                f"{source}: deadline must be a number of seconds (0 for none), not {deadline!r}"
            )
        return cls(frozenset(tools), float(deadline) or None)

    def lists(self, bound: BoundTool) -> bool:
        """Whether the operator lists ``bound`` as needing approval."""
        return f"{bound.plugin.name}.{bound.name}" in self.tools or bound.name in self.tools


class ApprovalCheck:
    """The wait check for approvals (see the module docstring for the rules).

    Args:
        policy: the operator's rules.
    """

    kind: WaitKind = "approval"

    def __init__(self, policy: ApprovalPolicy | None = None) -> None:
        self.policy = policy or ApprovalPolicy()

    def applies(self, bound: BoundTool) -> bool:
        """Whether any call of ``bound`` may need approval."""
        rule = bound.tool.approval
        if self.policy.lists(bound):
            return True
        if rule is None:
            return bound.plugin.manifest.approval
        return rule is not False

    async def check(self, call: PreparedCall) -> Wait | None:
        """A wait when ``call`` needs approval, else ``None``."""
        bound = call.bound
        name = f"{bound.plugin.name}.{bound.name}"
        if self.policy.lists(bound):
            reason = f"{name} needs a person's approval ([approvals] in oracle.toml)"
            return Wait("approval", reason, self.policy.deadline)
        rule = bound.tool.approval
        if rule is None:
            rule = bound.plugin.manifest.approval
        if rule is True:
            return Wait("approval", f"{name} needs a person's approval", self.policy.deadline)
        if rule is False:
            return None
        try:
            needed = bool(rule(dict(call.arguments), call.context))
        except Exception:
            log.exception("the approval rule of %s raised; a person decides", name)
            reason = f"{name} needs a person's approval (its approval rule failed)"
            return Wait("approval", reason, self.policy.deadline)
        if not needed:
            return None
        reason = f"{name} needs a person's approval for these arguments"
        return Wait("approval", reason, self.policy.deadline)
