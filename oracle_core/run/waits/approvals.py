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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle_core.plugins.registry import BoundTool
from oracle_core.run.calls import PreparedCall, Wait, WaitKind
from oracle_core.settings.approvals import DEFAULT_DEADLINE, ApprovalRules, approval_rules

log = logging.getLogger("oracle_core.run")

__all__ = ["DEFAULT_DEADLINE", "ApprovalCheck", "ApprovalPolicy"]
# DEFAULT_DEADLINE is read with the settings (settings/approvals.py); named here as before.


@dataclass(frozen=True)
class ApprovalPolicy(ApprovalRules):
    """The operator's approval rules (``[approvals]`` in ``oracle.toml``; the attributes
    ``tools`` and ``deadline`` are :class:`~oracle_core.settings.approvals.ApprovalRules`'s)."""

    @classmethod
    def from_config(cls, section: Any, source: str | Path = "oracle.toml") -> ApprovalPolicy:
        """The policy of an ``[approvals]`` table (read and checked by
        :func:`~oracle_core.settings.approvals.approval_rules`).

        Args:
            section: the table as read.
            source: the file it is in, for the messages.

        Raises:
            ApprovalConfigError: one line naming the file, the line, the key and the fix.
        """
        return cls.of(approval_rules(section, Path(source)))

    @classmethod
    def of(cls, rules: ApprovalRules) -> ApprovalPolicy:
        """The policy of the operator's checked ``rules`` (``Settings.approval_rules()``)."""
        return cls(rules.tools, rules.deadline)

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
