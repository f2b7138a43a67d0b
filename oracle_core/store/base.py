"""The checkpointer interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from oracle_core.run.messages import Message
from oracle_core.store.state import RunRecord, ThreadState


class Checkpointer(ABC):
    """Stores thread state so a run can stop and resume, in this process or another.

    Writes are steps: :meth:`append` adds a step's messages, loads and run record in one
    atomic transaction, so a crash never leaves a thread half-written. Messages are an
    append-only log; a writer that appends on top of a stale view gets
    :class:`~oracle_core.ThreadConflictError` instead of silently overwriting the other
    writer. Loaded plugins merge by union, so concurrent loads are never lost.
    """

    @abstractmethod
    async def load(self, thread_id: str) -> ThreadState:
        """Return the thread's state; an unknown thread is empty (no messages, nothing loaded)."""

    @abstractmethod
    async def append(
        self,
        thread_id: str,
        *,
        base: int,
        messages: Sequence[Message] = (),
        loaded: Sequence[str] = (),
        run: RunRecord | None = None,
    ) -> list[str]:
        """Save one step atomically.

        Args:
            thread_id: the thread.
            base: how many messages the writer knows the thread has; ``messages`` go after them.
            messages: new messages, appended in order.
            loaded: plugins to add to ``loaded_plugins`` (already present ones are ignored).
            run: the run's record to insert or update.

        Returns:
            The thread's ``loaded_plugins`` after the merge (it may include other writers' loads).

        Raises:
            ThreadConflictError: when ``messages`` is non-empty and the thread already has more
                than ``base`` messages (another writer appended first); nothing is written.
        """

    @abstractmethod
    async def threads(self) -> list[str]:
        """Every thread id stored, most recently updated first."""

    async def close(self) -> None:
        """Release connections and files. Safe to call twice."""
        return None
