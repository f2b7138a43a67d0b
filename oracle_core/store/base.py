"""The checkpointer interface."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from oracle_core.errors import ThreadConflictError
from oracle_core.store.events import EventChannel
from oracle_core.values.credentials import CredentialRecord
from oracle_core.values.messages import Message
from oracle_core.values.operations import Operation
from oracle_core.values.text import clean_json, clean_text
from oracle_core.values.threads import RunRecord, ThreadState, ThreadSummary, ThreadTail


class Checkpointer(ABC):
    """Stores thread state so a run can stop and resume, in this process or another.

    Writes are steps: :meth:`append` adds a step's messages, loads and run record in one
    atomic transaction, so a crash never leaves a thread half-written. Messages are an
    append-only log; a writer that appends on top of a stale view gets
    :class:`~oracle_core.ThreadConflictError` instead of silently overwriting the other
    writer. Loaded plugins merge by union, so concurrent loads are never lost.

    Text is valid UTF-8 in and out: every string a store saves (thread ids, any string at any
    depth of a message, keys included, plugin names, run records) is cleaned first with
    :func:`~oracle_core.values.text.clean_json` (a surrogate pair written as two code units becomes
    its character, a lone surrogate becomes U+FFFD), and what a store loads is cleaned too,
    so a thread saved before this rule still loads. A thread id is cleaned the same way on
    every call, so ``"a\\ud83d"`` and ``"a\\ufffd"`` name one thread.

    Leases keep one run at a time on a thread across processes: a run takes the thread's
    lease with :meth:`acquire`, renews it with each :meth:`append` (``lease=owner``) and gives
    it back with :meth:`release`. Expiry is wall-clock time (``time.time()``) of the process
    running the store's code; a lease whose expiry has passed is free for the next acquirer.
    A run left ``running`` whose thread has no live lease is found by :meth:`mark_interrupted`.
    """

    @abstractmethod
    async def load(self, thread_id: str) -> ThreadState:
        """Return the thread's state; an unknown thread is empty (no messages, nothing loaded).

        The state's ``message_tokens`` holds each message's token count, aligned with
        ``messages``; every string in it is valid UTF-8.
        """

    async def load_tail(self, thread_id: str, since: int) -> ThreadTail:
        """The messages of the thread from index ``since`` on, with what a run needs besides.

        A run that keeps the start of a thread from an earlier turn reads only what was
        added since (by it or by another process) and the runs still ``running``, not every
        message and run record again: a turn then costs the same at 10 messages or 500. The
        default reads the whole thread with :meth:`load`; stores override it to read less.
        """
        return tail_of(await self.load(thread_id), since)

    @abstractmethod
    async def append(
        self,
        thread_id: str,
        *,
        base: int,
        messages: Sequence[Message] = (),
        loaded: Sequence[str] = (),
        run: RunRecord | None = None,
        lease: str | None = None,
        tokens: Sequence[int] | None = None,
    ) -> list[str]:
        """Save one step atomically.

        Messages are cleaned and each one's tokens counted once (its public keys, see
        :func:`~oracle_core.store.saving.count_message`) before the step is saved; the counts
        come back in :attr:`ThreadState.message_tokens`. That work runs off the event loop.

        Args:
            thread_id: the thread.
            base: how many messages the writer knows the thread has; ``messages`` go after them.
            messages: new messages, appended in order.
            loaded: plugins to add to ``loaded_plugins`` (already present ones are ignored).
            run: the run's record to insert or update.
            lease: an owner whose lease on the thread this step renews, in the same
                transaction: when ``lease`` holds the thread's lease (live, or expired and not
                yet taken by anyone else), its expiry becomes now plus the ``ttl`` it was last
                acquired with. When it holds no lease on the thread (never acquired, released,
                or taken over after expiry), nothing is renewed and the step is still saved:
                ``base`` is what protects the message log.
            tokens: the writer's own token count of each message (the run loop counts once
                and passes them); the store counts the messages itself when absent.

        Returns:
            The thread's ``loaded_plugins`` after the merge (it may include other writers' loads).

        Raises:
            ThreadConflictError: when ``messages`` is non-empty and the thread already has more
                than ``base`` messages (another writer appended first); nothing is written.
        """

    @abstractmethod
    async def threads(self) -> list[str]:
        """Every thread id stored, most recently updated first."""

    async def thread_summaries(self, *, limit: int | None = None) -> list[ThreadSummary]:
        """The stored threads with their last activity and size, most recently updated first.

        The default reads every thread with :meth:`load` (its times are those of its runs);
        stores override it to read only the counts.

        Args:
            limit: the most threads to list; ``None`` lists every one.
        """
        summaries = []
        for thread_id in (await self.threads())[:limit]:
            state = await self.load(thread_id)
            times = [t for r in state.runs for t in (r.created_at, r.updated_at)] or [0.0]
            summaries.append(
                ThreadSummary(
                    thread_id,
                    created_at=min(times),
                    updated_at=max(times),
                    messages=len(state.messages),
                    tokens=sum(state.message_tokens),
                    runs=len(state.runs),
                )
            )
        return summaries

    async def delete(self, thread_id: str) -> bool:
        """Remove a thread and everything kept for it, in one transaction.

        Its messages, loaded plugins, runs, lease and lease waiters all go; a run still in
        progress on it finds the thread gone when it next saves (the caller should refuse to
        delete a thread it is running on).

        Returns:
            ``True`` when the thread existed.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot delete threads")

    @abstractmethod
    async def acquire(self, thread_id: str, owner: str, ttl: float) -> bool:
        """Take or renew the thread's lease for ``owner``, atomically across processes.

        The lease is taken when the thread has none, when its lease has expired (its expiry
        is at or before now), or when ``owner`` already holds it (a renewal) — and, so that a
        process running turn after turn cannot starve another, only when no other owner
        that is still trying (within :data:`WAITER_LIVENESS`) asked first: a refused
        acquirer keeps its place in the thread's queue by trying again. It then expires
        ``ttl`` seconds from now and later renewals by :meth:`append` extend it by the same
        ``ttl``. A thread has at most one lease; a thread need not exist to be leased.

        Args:
            thread_id: the thread.
            owner: who runs on it (unique per run, e.g. ``"<host>:<pid>:<run id>"``).
            ttl: seconds the lease lives without a renewal; must be positive.

        Returns:
            ``True`` when ``owner`` now holds the lease, ``False`` when another owner's live
            lease holds the thread (nothing changes then).

        Raises:
            ValueError: when ``ttl`` is not positive.
        """

    @abstractmethod
    async def release(self, thread_id: str, owner: str) -> None:
        """Give up ``owner``'s lease on the thread, so the next acquirer need not wait.

        Releasing a lease ``owner`` does not hold (never taken, already released, or taken
        over by another owner after it expired) does nothing.
        """

    @abstractmethod
    async def mark_interrupted(self, thread_id: str | None = None) -> list[str]:
        """Mark ``interrupted`` every ``running`` run whose thread has no live lease.

        A run is left ``running`` when its process dies mid-run; without a live lease on its
        thread (none, or expired) nothing is working on it any more. Each such run's status
        becomes ``interrupted``, its ``updated_at`` now, and its ``error`` (when empty) says
        why; its messages are kept. A run on a thread whose lease is live, whoever owns it,
        is left as it is. A run that never takes a lease is found interrupted by the first
        call, so every process sharing a store with callers of this method must take leases.

        Args:
            thread_id: only this thread's runs; every thread's when ``None``.

        Returns:
            The ids of the runs marked, oldest first.
        """

    # -- credentials (sealed by oracle_core.credentials.vault; the store never sees clear text)

    @abstractmethod
    async def save_credential(self, plugin: str, name: str, user_id: str, sealed: str) -> None:
        """Store the sealed credential of connection ``name`` of ``plugin`` for ``user_id``.

        Inserts or replaces, atomically; ``created_at`` is kept on a replace and
        ``updated_at`` becomes now. ``user_id`` is ``""`` for a shared connection.
        """

    @abstractmethod
    async def load_credential(
        self, plugin: str, name: str, user_id: str
    ) -> CredentialRecord | None:
        """The stored credential (with its ``sealed`` value), or ``None`` when there is none."""

    @abstractmethod
    async def delete_credential(self, plugin: str, name: str, user_id: str) -> bool:
        """Remove a stored credential; ``True`` when there was one."""

    @abstractmethod
    async def credentials(
        self, *, plugin: str | None = None, user_id: str | None = None
    ) -> list[CredentialRecord]:
        """The stored credentials, without their values (``sealed`` is ``""``).

        Ordered by plugin, name and user id; ``plugin`` and ``user_id`` narrow the list.
        """

    # -- operations (oracle_core.values.operations: approvals, connections, background calls)
    #
    # Every method that reads an operation first settles what time alone decides, each by
    # a compare-and-set so that whoever looks first wins and the rest see the same result:
    # an approval still ``pending`` at or past its ``deadline`` becomes ``denied`` (reason
    # DEADLINE_REASON); a ``background`` operation still ``running`` whose worker holds no
    # live lease on ``operation_lease(id)`` (its process died) becomes ``failed``
    # (error BACKGROUND_LOST_ERROR). Times are the store's clock, as for leases.

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
        key by key). Otherwise nothing changes.

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
        ``claimed_by`` to ``owner`` and adds one to ``claims`` (not for a repeat by ``owner``).

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
            ``False`` otherwise (nothing changes).
        """

    @property
    def events(self) -> EventChannel:
        """Where runs publish their events and followers of a thread receive them.

        The default fans out within this process; a store shared by several processes
        (Postgres) overrides it so followers see the runs of every process.
        """
        channel = self.__dict__.get("_event_channel")
        if channel is None:
            channel = self.__dict__["_event_channel"] = EventChannel()
        return channel

    async def close(self) -> None:
        """Release connections and files. Safe to call twice."""
        return None


WAITER_LIVENESS = 2.0
"""Seconds a waiter for a lease counts as still waiting after its last attempt.

Acquirers that keep trying (the run loop tries at least every 0.2 s) hold their place in
the queue; one that gave up loses it this long after its last try.
"""

INTERRUPTED_ERROR = "the run stopped before it ended: no process held its thread's lease"
"""The ``error`` :meth:`Checkpointer.mark_interrupted` gives a run that had none."""


def interrupt(run: RunRecord, now: float) -> None:
    """Mark ``run`` as :meth:`Checkpointer.mark_interrupted` does (in place)."""
    run.status, run.updated_at = "interrupted", now
    run.error = run.error or INTERRUPTED_ERROR


def check_ttl(ttl: float) -> None:
    """Raise :class:`ValueError` unless ``ttl`` is a positive number of seconds."""
    if not ttl > 0:
        raise ValueError(f"a lease's ttl must be a positive number of seconds, not {ttl!r}")


def conflict(thread_id: str, base: int, actual: int) -> ThreadConflictError:
    """The error raised when a writer appends on top of a stale view of a thread."""
    return ThreadConflictError(
        f"thread {thread_id!r} has {actual} messages but this writer expected {base}: another "
        "run appended to it meanwhile; reload the thread and retry"
    )


def credential_key(plugin: str, name: str, user_id: str) -> tuple[str, str, str]:
    """The cleaned ``(plugin, name, user_id)`` a credential is stored under."""
    return clean_text(plugin), clean_text(name), clean_text(user_id)


def load_operation(text: str) -> Operation:
    """The operation a store saved as JSON text, cleaned."""
    return Operation.from_record(clean_json(json.loads(text)))


def updated_operation(
    current: Operation,
    now: float,
    *,
    status: str,
    reason: str | None,
    result: str | None,
    error: str | None,
    details: Mapping[str, Any] | None,
) -> Operation:
    """``current`` as :meth:`Checkpointer.update_operation` changes it (strings cleaned)."""
    changes: dict[str, Any] = {"status": status, "updated_at": now}
    for name, value in (("reason", reason), ("result", result), ("error", error)):
        if value is not None:
            changes[name] = clean_text(value)
    if details is not None:
        changes["details"] = {**current.details, **clean_json(dict(details))}
    return current.replace(**changes)


def tail_of(state: ThreadState, since: int) -> ThreadTail:
    """The :class:`ThreadTail` of a whole ``state`` from message ``since`` on."""
    count = len(state.messages)
    start = since if since <= count else count  # a shrunk thread: nothing to add to
    return ThreadTail(
        thread_id=state.thread_id,
        since=since,
        messages=state.messages[start:],
        message_tokens=state.message_tokens[start:],
        count=count,
        loaded_plugins=state.loaded_plugins,
        running=[r for r in state.runs if r.status == "running"],
        before=state.messages[since - 1] if 0 < since <= count else None,
    )
