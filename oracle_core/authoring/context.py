"""What a running tool may learn about the call it serves."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from oracle_core.authoring.secrets import Secret
from oracle_core.errors import CredentialMissingError, UnknownConnectionError

if TYPE_CHECKING:
    from oracle_core.settings import Settings


@runtime_checkable
class ToolHost(Protocol):
    """What a tool may use of the oracle running it: settings and per-oracle plugin state.

    The running oracle offers more (an :class:`~oracle_core.OracleHandle`: registry, store,
    model, runs); a tool that needs it checks ``isinstance(context.oracle, OracleHandle)``.
    The context names only this much so that the values a tool sees never depend on the
    parts that run it.
    """

    @property
    def settings(self) -> Settings:
        """The operator's settings."""
        ...

    def plugin_state(self, plugin: str) -> dict[str, Any]:
        """The per-oracle state dict of ``plugin``."""
        ...


@dataclass(frozen=True)
class ToolContext:
    """Passed to a tool that declares a parameter annotated with ``ToolContext``.

    That parameter never appears in the tool's JSON schema, so the model cannot set it.

    Attributes:
        thread_id: the conversation thread the call belongs to.
        run_id: the run (one user message worked to an answer) making the call.
        plugin: the name of the plugin that owns the tool.
        config: that plugin's configuration (``[plugins.<name>]`` in ``oracle.toml``):
            an instance of the config model its manifest declares
            (``PluginManifest(config=MyConfig)``; write ``config: MyConfig = ctx.config``
            to have it typed), else a mapping of the values.
        user_id: who the run acts for (``"default"`` on the CLI).
        oracle: the running oracle, as a :class:`ToolHost` (settings, ``plugin_state``; in a
            run it is the whole :class:`~oracle_core.OracleHandle`, bound to this call: its
            ``model``'s calls are in the usage ledger under this plugin, run, thread and
            user, and spend from their budgets); ``None`` when a tool is called outside an
            oracle.
        cancellation: set when the call has been abandoned (it timed out, or the run was
            cancelled). A sync tool that loops or waits should check :attr:`cancelled`
            (or wait on this event) and return early: Python cannot stop a thread, so a
            tool that ignores it keeps a worker of the oracle's sync-tool pool busy.
        tool: the name of the tool being called.
        credentials: the credentials of the connections the tool lists, by connection name
            (``None``: not set); read them with :meth:`credential`. Never in the repr.
    """

    thread_id: str = "default"
    run_id: str | None = None
    plugin: str = ""
    config: Any = field(default_factory=dict)
    user_id: str = "default"
    oracle: ToolHost | None = None
    cancellation: threading.Event = field(default_factory=threading.Event, compare=False)
    tool: str = ""
    credentials: Mapping[str, Secret | None] = field(
        default_factory=dict, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        # The oracle's handle binds to this call, so the tool's own model calls
        # (``oracle.model``) are put down to its plugin, run, thread and user in the usage
        # ledger and spend from their budgets (run/plugin_calls.py).
        bind = getattr(self.oracle, "for_call", None)
        if callable(bind):
            object.__setattr__(self, "oracle", bind(self))

    @property
    def cancelled(self) -> bool:
        """Whether the call has been abandoned; stop working and return when it is."""
        return self.cancellation.is_set()

    def credential(self, name: str) -> Secret:
        """The credential of connection ``name``, which the tool lists in ``@tool(connections=...)``.

        In a run it is always set: a call that needs a missing one waits for it first.
        Pass ``.reveal()`` to the service that needs it; the :class:`Secret` itself shows
        only a mask, so returning, logging or raising with it by mistake leaks nothing.

        Raises:
            UnknownConnectionError: when the tool does not list ``name`` (only connections
                its own plugin declares and the tool lists can be read).
            CredentialMissingError: when it is not set (a tool called outside a run).
        """
        if name not in self.credentials:
            listed = ", ".join(map(repr, self.credentials)) or "none"
            raise UnknownConnectionError(
                f"tool {self.tool!r} of plugin {self.plugin!r} asked for connection {name!r}, "
                f"which it does not list (it lists: {listed}): add it to "
                "@tool(connections=[...]) and declare it in the plugin's manifest"
            )
        value = self.credentials[name]
        if value is None:
            raise CredentialMissingError(
                f"connection {name!r} of plugin {self.plugin!r} is not set for user "
                f"{self.user_id!r}: set it with `oracle connections set {self.plugin} {name}`"
            )
        return value
