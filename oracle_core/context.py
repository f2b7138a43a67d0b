"""What a running tool may learn about the call it serves."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolContext:
    """Passed to a tool that declares a parameter annotated with ``ToolContext``.

    That parameter never appears in the tool's JSON schema, so the model cannot set it.

    Attributes:
        thread_id: the conversation thread the call belongs to.
        run_id: the run (one user message worked to an answer) making the call.
        plugin: the name of the plugin that owns the tool.
        config: that plugin's configuration (``[plugins.<name>]`` in ``oracle.toml``).
        user_id: who the run acts for (``"default"`` on the CLI).
        oracle: the :class:`~oracle_core.Oracle` running the call, for plugins that need
            its store or settings; ``None`` when a tool is called outside an oracle.
    """

    thread_id: str = "default"
    run_id: str | None = None
    plugin: str = ""
    config: Mapping[str, Any] = field(default_factory=dict)
    user_id: str = "default"
    oracle: Any = None
