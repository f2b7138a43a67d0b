"""The threads facet of a store: a thread's append-only message log, its loads and runs."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, Protocol

from oracle_core.errors import ThreadConflictError
from oracle_core.store.facets import FacetName, offered
from oracle_core.store.usage import UsageEntry
from oracle_core.values.messages import Message
from oracle_core.values.threads import (
    RunRecord,
    ThreadState,
    ThreadSummary,
    ThreadTail,
    tail_of,
)
from oracle_core.values.titles import first_user_title


class ThreadStore(Protocol):
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

    Threads are the one facet every store must offer. The others are optional
    (:mod:`oracle_core.store.facets`): a store offers one by subclassing its protocol, or
    by answering :meth:`facet` with an object that implements it.
    """

    def facet(self, name: FacetName) -> Any:
        """This store's optional facet ``name``, or ``None`` when it offers none.

        ``name`` is ``"leases"`` (:class:`~oracle_core.store.leases.LeaseStore`),
        ``"operations"`` (:class:`~oracle_core.store.operations.OperationStore`),
        ``"credentials"`` (:class:`~oracle_core.store.credentials.CredentialStore`) or
        ``"usage"`` (:class:`~oracle_core.store.usage.UsageStore`). The default answers with
        the store itself when its class subclasses that protocol; override it to hand out
        another object (a usage ledger kept elsewhere) or to withhold a facet. Ask through
        :func:`~oracle_core.store.facets.facet_of`, which types the answer.
        """
        return offered(self, name)

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
        usage: Sequence[UsageEntry] = (),
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
            usage: rows for the usage ledger (:meth:`~oracle_core.store.usage.UsageStore.record_usage`),
                written in the same transaction: a step's calls are in the ledger exactly
                when the step is saved, for one write.

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
        """The stored threads with their last activity, size and title, most recently updated first.

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
                    title=first_user_title(state.messages),
                )
            )
        return summaries

    async def delete(self, thread_id: str) -> bool:
        """Remove a thread and everything kept for it, in one transaction.

        Its messages, loaded plugins, runs, operations, lease and lease waiters all go; a run
        still in progress on it finds the thread gone when it next saves (the caller should
        refuse to delete a thread it is running on).

        Returns:
            ``True`` when the thread existed.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot delete threads")


def conflict(thread_id: str, base: int, actual: int) -> ThreadConflictError:
    """The error raised when a writer appends on top of a stale view of a thread."""
    return ThreadConflictError(
        f"thread {thread_id!r} has {actual} messages but this writer expected {base}: another "
        "run appended to it meanwhile; reload the thread and retry"
    )
