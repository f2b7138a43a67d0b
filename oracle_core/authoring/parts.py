"""What a plugin may use of a running oracle's parts: its registry, thread store and model.

Protocols, so that the author's layer names only the members a plugin may rely on and
depends on none of the layers that implement them: the oracle's
:class:`~oracle_core.plugins.registry.Registry`,
:class:`~oracle_core.store.base.Checkpointer` and :class:`~oracle_core.models.base.Model`
satisfy them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol

from oracle_core.authoring.manifest import ManifestWarning, PluginManifest, Visibility
from oracle_core.errors import PluginError
from oracle_core.values.messages import ModelRequest, ModelResponse, RequestTool
from oracle_core.values.threads import ThreadState, ThreadSummary


class PluginView(Protocol):
    """One plugin that assembled, as another plugin may read it."""

    @property
    def name(self) -> str:
        """Its name (the manifest's)."""
        ...

    @property
    def manifest(self) -> PluginManifest:
        """Its manifest."""
        ...

    @property
    def visibility(self) -> Visibility:
        """Its tier."""
        ...

    @property
    def tools(self) -> Sequence[RequestTool]:
        """Its tools, as the model is shown them (to plugins: descriptions, never runnable)."""
        ...

    @property
    def config(self) -> Any:
        """Its configuration (its config model's instance, or a dict)."""
        ...


class RegistryView(Protocol):
    """The plugins of a running oracle: which assembled and started, and which failed."""

    @property
    def plugins(self) -> Mapping[str, PluginView]:
        """Every plugin that assembled and started, by name."""
        ...

    @property
    def failures(self) -> Sequence[PluginError]:
        """Why each plugin that was left out was left out."""
        ...

    @property
    def warnings(self) -> Sequence[ManifestWarning]:
        """The soft limits the plugins' manifests exceed."""
        ...

    def get(self, name: str) -> PluginView | None:
        """The plugin called ``name``, if it is there."""
        ...

    def __contains__(self, name: object) -> bool:
        """Whether a plugin called ``name`` is there."""
        ...

    def __len__(self) -> int:
        """How many plugins are there."""
        ...


class ThreadStore(Protocol):
    """The oracle's thread store, for reading and removing threads."""

    async def load(self, thread_id: str) -> ThreadState:
        """The thread's state (an unknown thread is empty)."""
        ...

    async def threads(self) -> list[str]:
        """Every thread id stored, most recently updated first."""
        ...

    async def thread_summaries(self, *, limit: int | None = None) -> list[ThreadSummary]:
        """The stored threads with their last activity and size, most recently updated first."""
        ...

    async def delete(self, thread_id: str) -> bool:
        """Remove a thread and everything kept for it; ``True`` when it existed."""
        ...


class ModelView(Protocol):
    """The model the oracle's runs talk to, for a plugin's own model calls.

    A handle's model puts each call in the usage ledger under the plugin (and the run it is
    made in) and holds it to the budgets: a spent one raises
    :class:`~oracle_core.errors.BudgetExceededError` before the call (docs/usage.md).
    """

    @property
    def name(self) -> str:
        """The model's name."""
        ...

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` in one piece."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        """Answer ``request`` as text pieces followed by the whole response."""
        ...
