"""The scripted model over HTTP: litellm talking to a :class:`FakeOpenAI` server on 127.0.0.1.

:class:`HTTPScriptedModel` is scripted exactly like the in-process
:class:`~oracle_core.testing.ScriptedModel` (they share
:class:`~oracle_core.testing.scripted.ScriptedModelBase`), but it is a real
:class:`~oracle_core.models.litellm.LiteLLMModel`: each call goes through
``litellm.acompletion`` over HTTP, so a test covers the production path (streaming over the
wire, retries, HTTP errors, the real-request guard). It costs litellm's import and a server.

    with HTTPScriptedModel() as model:
        model.reply_error(503, "overloaded").reply_text("Sunny.")
        oracle = Oracle([weather], entry_points=False, model=model)
        ...
        assert model.last_request.headers["user-agent"].startswith("AsyncOpenAI/")
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from oracle_core.models.litellm import LiteLLMModel
from oracle_core.testing.openai_server import FakeOpenAI
from oracle_core.testing.scripted import CALL_HEADER, ScriptedModelBase
from oracle_core.values.messages import ModelRequest, ModelResponse


class HTTPScriptedModel(ScriptedModelBase, LiteLLMModel):
    """A scripted model reached through litellm over loopback HTTP, like any provider.

    The server starts on construction; :meth:`close` (or leaving a ``with`` block) stops it.
    The ``oracle_http_model`` pytest fixture makes one per test.

    Args:
        name: the model name sent to the server (``openai/<name>`` for litellm).
        num_retries: litellm's retries; 0 by default, so one step makes exactly one request.
        options: more keyword arguments for ``litellm.acompletion``.

    Attributes:
        server: the :class:`FakeOpenAI` server it talks to.
    """

    def __init__(
        self, name: str = "scripted-model", *, num_retries: int = 0, **options: Any
    ) -> None:
        self.server = FakeOpenAI().start()
        LiteLLMModel.__init__(
            self,
            f"openai/{name}",
            api_base=self.server.url,
            api_key="sk-oracle-test",
            num_retries=num_retries,
            **options,
        )
        ScriptedModelBase.__init__(self, self.server.replies)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` through litellm and the scripted server."""
        return await super().complete(self._tagged(request))

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        """Stream the answer to ``request`` through litellm and the scripted server."""
        async for piece in super().stream(self._tagged(request)):
            yield piece

    def close(self) -> None:
        """Stop the server."""
        self.server.stop()

    def _tagged(self, request: ModelRequest) -> ModelRequest:
        """``request`` with a header that ties the HTTP request back to its run and step."""
        headers = {**request.options.get("extra_headers", {}), CALL_HEADER: self._tag(request)}
        return request.replace(options={**request.options, "extra_headers": headers})
