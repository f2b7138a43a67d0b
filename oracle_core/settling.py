"""What a person settles through an oracle: approvals, connections and operations.

:class:`Settling` is the part of the :class:`~oracle_core.Oracle` that answers for waits
(docs/waits.md, docs/connections.md): deciding an approval, resuming a settled wait,
listing, reading and cancelling operations, and supplying, deleting and listing
credentials. Each method delegates to :mod:`oracle_core.run.waits.settle` or the
credential store; the oracle inherits them, so they are called on it as
``oracle.decide(...)``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from oracle_core.authoring.secrets import Secret
from oracle_core.blocking import Blocking, sync_twin
from oracle_core.credentials.sealed import ConnectionStatus, Credentials, statuses
from oracle_core.run.waits import settle
from oracle_core.values.operations import Operation
from oracle_core.values.result import RunResult

if TYPE_CHECKING:
    from oracle_core.plugins.registry import Registry
    from oracle_core.run.deps import RunDeps
    from oracle_core.settings import Settings
    from oracle_core.store.base import Checkpointer
    from oracle_core.values.limits import RunLimits


class Settling(Blocking):
    """Approvals, connections and operations of an oracle (the oracle's base class).

    It uses what the oracle has: its settings, limits, registry, store and run deps.
    """

    _credentials: Credentials | None = None

    if TYPE_CHECKING:  # what the oracle provides
        settings: Settings
        limits: RunLimits

        @property
        def registry(self) -> Registry: ...
        @property
        def checkpointer(self) -> Checkpointer: ...
        async def run_deps(self) -> RunDeps: ...

    # -- operations: approvals, connections, background calls (docs/waits.md) -------------------

    async def decide(
        self, operation_id: str, *, approve: bool, reason: str | None = None
    ) -> RunResult:
        """Decide an approval, once, and resume its run, once.

        The decision is a compare-and-set in the store; the approved call then runs with
        exactly its saved arguments and the model loop goes on, or a denial tells the model
        a person declined (with ``reason``). The same decision again answers with the
        first outcome.

        Raises:
            OperationNotFoundError: for an unknown id.
            DecisionConflictError: when a different decision was recorded first (a passed
                deadline counts as a denial).
            OperationError: when it is not an approval, or the approved tool is gone
                (nothing runs and nothing is recorded then).
        """
        deps = await self.run_deps()
        return await settle.decide(deps, operation_id, approve=approve, reason=reason)

    decide_sync = sync_twin(decide)

    async def resume_operation(self, operation_id: str) -> RunResult:
        """Resume the run of a settled wait, exactly once (the first outcome again after).

        For waits settled by other means than :meth:`decide` (a supplied connection).

        Raises:
            OperationNotFoundError: for an unknown id.
            OperationError: when it is still open, or its call's tool is gone.
        """
        return await settle.resume(await self.run_deps(), operation_id)

    async def operations(
        self, *, thread_id: str | None = None, status: str | None = None
    ) -> list[Operation]:
        """Operations, oldest first; ``thread_id`` and ``status`` narrow the list."""
        deps = await self.run_deps()
        return await deps.store.list_operations(thread_id=thread_id, status=status)

    operations_sync = sync_twin(operations)

    async def operation(self, operation_id: str) -> Operation:
        """One operation.

        Raises:
            OperationNotFoundError: for an unknown id.
        """
        return await settle.get(await self.run_deps(), operation_id)

    operation_sync = sync_twin(operation)

    async def cancel_operation(self, operation_id: str) -> Operation:
        """Cancel an operation: a background call stops, a wait's call is answered cancelled.

        Raises:
            OperationNotFoundError: for an unknown id.
            DecisionConflictError: when it was settled otherwise first.
        """
        return await settle.cancel(await self.run_deps(), operation_id)

    cancel_operation_sync = sync_twin(cancel_operation)

    # -- connections (docs/connections.md) -------------------------------------------------------

    @property
    def credentials(self) -> Credentials:
        """The credential store: sealed in the checkpointer, key from ``ORACLE_SECRET_KEY``."""
        if self._credentials is None:
            env = self.settings.env or os.environ  # Settings(...) made in code reads none
            self._credentials = Credentials(self.checkpointer, env)
        return self._credentials

    async def supply_credential(
        self, plugin: str, name: str, value: str | Secret, *, user_id: str = "default"
    ) -> list[RunResult]:
        """Store a credential (sealed) and resume the runs waiting on it, each exactly once.

        For a per-user connection it is ``user_id``'s credential; a shared one serves every
        user, and every run waiting on it resumes. A plugin's OAuth callback route calls
        this with the token it obtained. The oracle starts only when a run resumes.

        Returns:
            The outcome of each run this call resumed (none waited: an empty list).

        Raises:
            UnknownConnectionError: when no loaded plugin ``plugin`` declares ``name``.
            InvalidCredentialError: for an empty, too long or multi-line value, or a bad user id.
            SecretKeyError: when ``ORACLE_SECRET_KEY`` is missing or invalid (nothing is stored).
        """
        credentials, grace = self.credentials, self.limits.lease_ttl
        return await settle.supply(
            credentials, self.registry, self.run_deps, plugin, name, value,
            operations=self.checkpointer, user_id=user_id, grace=grace,
        )  # fmt: skip

    supply_credential_sync = sync_twin(supply_credential)

    async def delete_credential(self, plugin: str, name: str, *, user_id: str = "default") -> bool:
        """Remove a stored credential; ``True`` when there was one.

        A credential of a connection no loaded plugin declares any more (the plugin was
        removed) is removed too: ``user_id``'s, else the shared one.

        Raises:
            UnknownConnectionError: when no loaded plugin ``plugin`` declares ``name`` and
                nothing is stored under that name.
        """
        return await self.credentials.delete_named(self.registry, plugin, name, user_id)

    async def connection_statuses(self, *, user_id: str | None = None) -> list[ConnectionStatus]:
        """Every declared connection and whether it is set, per user, never with a value."""
        records = await self.checkpointer.credentials()  # shared ones are stored under ""
        return statuses(self.registry, records, user_id)
