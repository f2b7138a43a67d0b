"""Refusing real model requests in tests.

While :func:`refuse_model_requests` is active, a :class:`~oracle_core.models.litellm.LiteLLMModel`
or :class:`~oracle_core.models.openai.OpenAIModel` may only reach a server on this machine (``127.0.0.1``, ``localhost``, ``::1``), which is
where :class:`~oracle_core.testing.HTTPScriptedModel` and ``FakeOpenAI`` listen (the
in-process :class:`~oracle_core.testing.ScriptedModel` makes no request at all). Any other call
(a provider's default endpoint, a remote ``api_base``) raises :class:`RealModelRequestError`
before any request is made, so a test never spends tokens or depends on the network by accident.

The pytest plugin turns it on in every test that uses the harness fixtures (its
``oracle_refuse_model_requests`` fixture); opt a test in to real requests with
``@pytest.mark.oracle_allow_model_requests``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from oracle_core.errors import OracleError
from oracle_core.models.litellm import LiteLLMModel
from oracle_core.models.openai import OpenAIModel
from oracle_core.values.loopback import is_loopback_url
from oracle_core.values.messages import ModelRequest, ModelResponse

OPT_IN = (
    "mark the test with @pytest.mark.oracle_allow_model_requests, set "
    "oracle_allow_model_requests = true in the pytest configuration, or run with "
    "ORACLE_ALLOW_MODEL_REQUESTS=1"
)
"""How a test opts in to real model requests (quoted in refusals)."""


class RealModelRequestError(OracleError):
    """A test tried to call a real model while real model requests are refused.

    Attributes:
        model: the litellm model string.
        api_base: where the request would have gone (``None``: the provider's default).
    """

    def __init__(self, model: str, api_base: str | None) -> None:
        where = f"at {api_base}" if api_base else "at the provider's default endpoint"
        super().__init__(
            f"a real model request to {model!r} {where} was refused: tests may only reach "
            f"models on 127.0.0.1. Use the oracle_model fixture (a scripted model), or {OPT_IN}."
        )
        self.model = model
        self.api_base = api_base


@contextmanager
def refuse_model_requests() -> Iterator[list[RealModelRequestError]]:
    """Refuse model calls (litellm or direct) to anything but loopback while the block runs.

    Yields the list of refusals made, so a caller can report requests that a run swallowed
    as a failed run. Blocks nest; leaving one restores what was there before.
    """
    refused: list[RealModelRequestError] = []
    guarded: list[tuple[Any, Any, Any]] = []

    def check(model: LiteLLMModel | OpenAIModel, request: ModelRequest) -> None:
        api_base = request.options.get("api_base") or model.api_base
        if not is_loopback_url(api_base):
            error = RealModelRequestError(request.model or model.name, api_base)
            refused.append(error)
            raise error

    def guard(cls: Any) -> None:
        complete, stream = cls.complete, cls.stream

        async def guarded_complete(self: Any, request: ModelRequest) -> ModelResponse:
            check(self, request)
            result: ModelResponse = await complete(self, request)
            return result

        async def guarded_stream(
            self: Any, request: ModelRequest
        ) -> AsyncIterator[str | ModelResponse]:
            check(self, request)
            async for piece in stream(self, request):
                yield piece

        guarded.append((cls, complete, stream))
        cls.complete, cls.stream = guarded_complete, guarded_stream

    for cls in (LiteLLMModel, OpenAIModel):
        guard(cls)
    try:
        yield refused
    finally:
        for cls, complete, stream in reversed(guarded):
            cls.complete, cls.stream = complete, stream
