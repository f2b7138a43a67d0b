"""What a plugin's hooks and tools are handed: a typed handle on the oracle, by phase.

Two phases, two handles, each complete when a plugin receives it:

- **Assembly** (``oracle_tools``, ``oracle_middleware``, ``oracle_routes`` asking for
  ``oracle``): a :class:`PluginHost`. The registry does not exist yet, so the host offers
  only what exists: the operator's :class:`~oracle_core.Settings` and the per-oracle
  :meth:`~PluginHost.plugin_state` dict. Open resources here or in ``oracle_startup``.
- **Running** (``oracle_startup``, ``oracle_shutdown``, and tools through
  ``ToolContext.oracle``, typed there as the narrower :class:`~oracle_core.ToolHost`): an
  :class:`OracleHandle`, which the :class:`~oracle_core.Oracle` itself satisfies. The
  registry is final (plugins whose startup failed are gone), and the store and model are
  ready to use.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from oracle_core.authoring.context import ToolHost

if TYPE_CHECKING:
    from oracle_core.authoring.parts import ModelView, RegistryView, ThreadStore
    from oracle_core.authoring.secrets import Secret
    from oracle_core.settings import Settings
    from oracle_core.values.events import Event
    from oracle_core.values.result import RunResult


class PluginStates:
    """Per-oracle state of each plugin by name: one dict per plugin, made on first use.

    The oracle owns one; its :class:`PluginHost` and the oracle itself hand out the same
    dicts, so what a plugin keeps at assembly is there at startup, in tools and at shutdown.
    """

    def __init__(self) -> None:
        self._states: dict[str, dict[str, Any]] = {}

    def __call__(self, plugin: str) -> dict[str, Any]:
        """The state dict of ``plugin`` (created empty on first use)."""
        return self._states.setdefault(plugin, {})


class PluginHost:
    """What assembly hooks get as ``oracle``: settings and per-oracle plugin state.

    Args:
        settings: the oracle's settings.
        states: the oracle's plugin states.
    """

    def __init__(self, settings: Settings, states: PluginStates) -> None:
        self.settings = settings
        self._states = states

    def plugin_state(self, plugin: str) -> dict[str, Any]:
        """A dict a plugin may keep per-oracle state in (connections, caches), by plugin name."""
        return self._states(plugin)

    def __repr__(self) -> str:
        return f"<PluginHost home={str(self.settings.home)!r}>"


@runtime_checkable
class OracleHandle(ToolHost, Protocol):
    """What ``oracle_startup``, ``oracle_shutdown`` and tools may use of a running oracle."""

    @property
    def registry(self) -> RegistryView:
        """Every plugin that assembled and started, with its tools, middleware and routes."""
        ...

    @property
    def checkpointer(self) -> ThreadStore:
        """The thread store."""
        ...

    @property
    def model(self) -> ModelView:
        """The model runs talk to."""
        ...

    def stream(
        self, thread_id: str, message: str, *, user_id: str = ..., text_deltas: bool = ...
    ) -> AsyncIterator[Event]:
        """Run one user message on a thread, yielding events."""
        ...

    async def run(self, thread_id: str, message: str, *, user_id: str = ...) -> RunResult:
        """Run one user message on a thread to its answer."""
        ...

    async def supply_credential(
        self, plugin: str, name: str, value: str | Secret, *, user_id: str = ...
    ) -> list[RunResult]:
        """Store a credential (sealed) and resume the runs waiting on it (an OAuth callback)."""
        ...
