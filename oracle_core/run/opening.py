"""What a new run does with its thread's operations as it opens, as the run sees it.

The run loop knows operations only through this protocol: the facade hands it the step
of :mod:`oracle_core.run.waits.opening` in :class:`~oracle_core.run.deps.RunDeps`, so the
loop never imports the waits that build on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from oracle_core.models.wire import calls_of
from oracle_core.store.base import Checkpointer
from oracle_core.values.messages import Message


class OpenedOperations(Protocol):
    """A thread's operations, as a run opening on it needs them."""

    @property
    def any(self) -> bool:
        """Whether the thread has any operation (the request shows ``get_operation``)."""

    def messages(self) -> list[Message]:
        """What to save before the user's message (finished background results)."""

    async def finish(self, store: Checkpointer, owner: str) -> None:
        """Called once those messages were saved."""


class OpenOperations(Protocol):
    """The step: the thread's operations for a run opening on it (``owner`` holds the lease).

    Raises:
        ThreadWaitingError: when a run of the thread waits for an operation.
    """

    async def __call__(
        self, store: Checkpointer, thread_id: str, owner: str, messages: Sequence[Message]
    ) -> OpenedOperations:
        """Look at the thread's operations and claim what the new run hands over."""


def unanswered_calls(messages: Sequence[Message]) -> list[str]:
    """Ids of the calls of the thread's last model response that have no tool message."""
    answered: set[str] = set()
    for message in reversed(messages):
        if message.get("role") == "tool":
            answered.add(str(message.get("tool_call_id")))
            continue
        return [call.id for call in calls_of(message) if call.id not in answered]
    return []
