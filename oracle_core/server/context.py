"""What every route of the server needs: the oracle, auth, limits and the runs in progress."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from oracle_core.errors import PluginConflictError
from oracle_core.server.auth import BearerAuth
from oracle_core.server.errors import ApiError
from oracle_core.server.hosts import HostPolicy
from oracle_core.server.limits import Limits
from oracle_core.server.runs import ThreadRuns
from oracle_core.values.ids import check_thread_id
from oracle_core.values.messages import Message

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle


@dataclass
class ServerContext:
    """The server's shared parts; plugin endpoints reach it as ``request.app.state.server``.

    Attributes:
        oracle: the oracle being served.
        auth: the bearer-token check.
        limits: request limits.
        hosts: the ``Host`` names the server answers to.
        runs: the runs in progress, at most one per thread.
        route_failures: plugins whose HTTP routes were left out (a bad or clashing path).
    """

    oracle: Oracle
    auth: BearerAuth
    limits: Limits
    hosts: HostPolicy = field(default_factory=HostPolicy)
    runs: ThreadRuns = field(init=False)
    route_failures: list[PluginConflictError] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.runs = ThreadRuns(self.oracle)

    def check_thread_id(self, thread_id: str) -> str:
        """Return ``thread_id`` if the server accepts it.

        Raises:
            InvalidThreadIdError: saying what fits (answered 422 by the error table).
        """
        return check_thread_id(thread_id)

    def check_history(self, messages: list[Message]) -> list[Message]:
        """Return ``messages`` if a stateless request may carry them, else raise 422.

        At most ``max_history_messages`` of them, each within ``max_message_chars``.
        """
        limit = self.limits.max_history_messages
        if len(messages) > limit:
            raise ApiError(
                422,
                "history_too_long",
                f"the request carries {len(messages)} earlier messages; this server accepts at "
                f"most {limit} (--max-history-messages): send fewer, or keep the conversation "
                "on the server with thread_id",
            )
        longest = max((len(str(m.get("content") or "")) for m in messages), default=0)
        if longest > self.limits.max_message_chars:
            raise ApiError(
                422,
                "message_too_long",
                f"an earlier message is {longest} characters; this server accepts at most "
                f"{self.limits.max_message_chars} in any message",
            )
        return messages

    def check_message(self, message: str) -> str:
        """Return ``message`` if it fits the limit, else raise 422 naming the limit."""
        if len(message) > self.limits.max_message_chars:
            raise ApiError(
                422,
                "message_too_long",
                f"the message is {len(message)} characters; this server accepts at most "
                f"{self.limits.max_message_chars}",
            )
        if not message.strip():
            raise ApiError(422, "empty_message", "the message is empty: send some text")
        return message
