"""Models: the one thing the run loop asks for an assistant message.

:class:`Model` is the interface; :class:`~oracle_core.models.litellm.LiteLLMModel` talks to
any provider litellm supports, :class:`~oracle_core.models.demo.DemoModel` is the offline
stand-in, and :mod:`oracle_core.testing` has in-process and HTTP test models.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator

from oracle_core.errors import ModelError
from oracle_core.models.wire import assistant_message, tool_call  # built in wire.py; kept here
from oracle_core.values.messages import ModelRequest, ModelResponse

__all__ = ["EmptyReplyError", "Model", "ModelError", "assistant_message", "tool_call"]


class EmptyReplyError(ModelError):
    """The model answered with nothing: no text and no tool calls.

    The run fails with it (status ``failed``, this message as its error) rather than
    complete with an empty answer; the thread takes a next message as ever.

    Attributes:
        model: the model string.
        finish_reason: why the model said it stopped (``None`` when it did not say).
    """

    def __init__(self, model: str, finish_reason: str | None = None) -> None:
        why = {
            None: "",
            "stop": "",
            "length": "; it stopped at its output limit (max_tokens) before writing anything",
            "content_filter": "; the provider's content filter stopped it",
        }.get(finish_reason, f"; finish_reason {finish_reason!r}")
        super().__init__(
            f"the model {model!r} returned an empty reply (no text and no tool calls{why}); "
            "send the message again, or try another model"
        )
        self.model = model
        self.finish_reason = finish_reason


class Model(ABC):
    """Something that answers a :class:`ModelRequest` with an assistant message."""

    name: str = "model"

    @abstractmethod
    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` in one piece."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        """Answer ``request`` as text pieces followed by the whole :class:`ModelResponse`.

        The default streams the complete answer as one piece.
        """
        response = await self.complete(request)
        if response.text:
            yield response.text
        yield response

    async def aclose(self) -> None:
        """Release connections; the oracle calls it when it closes. Safe to call twice."""
        return None
