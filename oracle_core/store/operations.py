"""The operations facet of a store: approvals, connections and background calls.

Every method that reads an operation first settles what time alone decides
(:func:`~oracle_core.values.operations.settle`), each by a compare-and-set so that whoever
looks first wins and the rest see the same result: an approval still ``pending`` at or past
its ``deadline`` becomes ``denied``; a ``background`` operation still ``running`` whose
worker holds no live lease on ``operation_lease(id)`` (its process died) becomes
``failed``. Times are the store's clock, as for leases. What every change makes of an
operation is decided by the pure rules of :mod:`oracle_core.values.operations`; a store
only reads, locks and writes.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Mapping
from typing import Any, Protocol

from oracle_core.values.operations import Operation


class OperationStore(Protocol):
    """Keeps operations (:class:`~oracle_core.values.operations.Operation`), every change atomic."""

    @abstractmethod
    async def insert_operation(self, operation: Operation) -> None:
        """Save a new operation as it is (its ``created_at``/``updated_at`` are kept).

        Raises:
            ValueError: when an operation with its id exists already (nothing changes).
        """

    @abstractmethod
    async def get_operation(self, operation_id: str) -> Operation | None:
        """The operation with this id (settled first, see above), or ``None``."""

    @abstractmethod
    async def list_operations(
        self,
        *,
        thread_id: str | None = None,
        status: str | None = None,
        run_id: str | None = None,
        kind: str | None = None,
        limit: int = 1000,
    ) -> list[Operation]:
        """Operations matching every filter given (settled first), oldest first, at most ``limit``."""

    @abstractmethod
    async def update_operation(
        self,
        operation_id: str,
        *,
        expect: Collection[str],
        status: str,
        reason: str | None = None,
        result: str | None = None,
        error: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> tuple[Operation, bool]:
        """Compare-and-set an operation's status, atomically across processes.

        When the operation's status (settled first) is one of ``expect``, it becomes
        ``status``, ``updated_at`` becomes now, and each of ``reason``, ``result``, ``error``
        and ``details`` that is not ``None`` replaces the saved value (``details`` merges
        key by key). Otherwise nothing changes (see :func:`~oracle_core.values.operations.update`).

        Returns:
            The operation as it is after the call, and whether this call changed it.

        Raises:
            OperationNotFoundError: when there is no operation with this id.
        """

    @abstractmethod
    async def claim_operation(self, operation_id: str, owner: str) -> Operation | None:
        """Claim carrying a settled operation on (resuming its run, delivering its result).

        The claim is taken, atomically, when the operation (settled first) is no longer open
        (its status is not in ``OPEN_STATUSES``), it was not carried on yet (``resumed_at``
        is ``None``), and it is unclaimed, claimed by ``owner`` already, or claimed by an
        owner that holds no live lease on the operation's thread any more (it died: claims
        are tied to the claimer's thread lease, so take that lease first). A claim sets
        ``claimed_by`` to ``owner`` and adds one to ``claims`` (not for a repeat by ``owner``;
        see :func:`~oracle_core.values.operations.claim`).

        Returns:
            The claimed operation, or ``None`` when it is not claimable now (unknown, open,
            carried on already, or claimed by a live owner).
        """

    @abstractmethod
    async def finish_operation(
        self, operation_id: str, owner: str, outcome: Mapping[str, Any]
    ) -> bool:
        """Mark a claimed operation carried on: ``resumed_at`` now, ``outcome`` saved.

        Returns:
            ``True`` when ``owner`` held the claim and the operation was not finished yet;
            ``False`` otherwise (nothing changes; see :func:`~oracle_core.values.operations.finish`).
        """
