"""Reading OpenAI chat completion objects: shared by every model that speaks the OpenAI shape.

litellm and the openai SDK answer with objects of the same shape (``choices[0].message``,
streamed ``choices[0].delta`` pieces, ``usage``), so :class:`~oracle_core.models.litellm.LiteLLMModel`
and :class:`~oracle_core.models.openai.OpenAIModel` turn them into a :class:`ModelResponse`
with the same code, and report the same message, tool calls and usage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from oracle_core.errors import ModelError
from oracle_core.models.base import Model, assistant_message
from oracle_core.values.messages import ModelResponse, Usage


def usage_from(raw: Any) -> Usage:
    """The :class:`Usage` of a response's or chunk's ``usage`` (an object or a dict)."""
    if raw is None:
        return Usage()
    get = raw.get if isinstance(raw, dict) else lambda k, d=0: getattr(raw, k, d)
    return Usage(int(get("prompt_tokens", 0) or 0), int(get("completion_tokens", 0) or 0))


def response_from(completion: Any) -> ModelResponse:
    """The :class:`ModelResponse` of a whole (non-streamed) chat completion."""
    message = completion.choices[0].message
    tool_calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.function.name, "arguments": call.function.arguments or ""},
        }
        for call in (message.tool_calls or [])
    ]
    return ModelResponse(
        assistant_message(message.content, tool_calls),
        usage_from(getattr(completion, "usage", None)),
    )


class StreamAssembler:
    """Collects streamed chunks into the whole answer.

    Feed each chunk to :meth:`add`, which returns its text piece (if any); :meth:`response`
    is the assembled :class:`ModelResponse`, tool calls merged by index and the last usage
    reported.
    """

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._usage = Usage()

    def add(self, chunk: Any) -> str | None:
        """Take one chunk; return its text piece, or ``None`` when it has none."""
        if getattr(chunk, "usage", None):
            self._usage = usage_from(chunk.usage)
        if not chunk.choices:
            return None
        delta = chunk.choices[0].delta
        for piece in getattr(delta, "tool_calls", None) or []:
            call = self._calls.setdefault(
                piece.index or 0,
                {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
            )
            call["id"] = piece.id or call["id"]
            if piece.function is not None:
                call["function"]["name"] += piece.function.name or ""
                call["function"]["arguments"] += piece.function.arguments or ""
        text = getattr(delta, "content", None)
        if text:
            self._text.append(text)
            return str(text)
        return None

    def response(self) -> ModelResponse:
        """The whole answer streamed so far."""
        tool_calls = [self._calls[i] for i in sorted(self._calls)]
        return ModelResponse(
            assistant_message("".join(self._text) or None, tool_calls), self._usage
        )


def call_failed(model: str, error: BaseException, detail: object | None = None) -> ModelError:
    """The :class:`ModelError` for a call to ``model`` that raised ``error``.

    The message names the model, the HTTP status when there was one, the error's type, and
    ``detail`` (default: the error's own text): ``model call to 'openai/gpt-4o' failed
    (HTTP 429): RateLimitError: ...``.
    """
    status = getattr(error, "status_code", None)
    where = f" (HTTP {status})" if status else ""
    text = error if detail is None else detail
    hint = f" ({KEY_HINT})" if status in (401, 403) else ""
    return ModelError(
        f"model call to {model!r} failed{where}: {type(error).__name__}: {text}{hint}"
    )


KEY_HINT = (
    "the model server refused the API key: set ORACLE_API_KEY (or pass --api-key) to a "
    "key it accepts"
)
"""What a 401 or 403 from the model server tells the operator to do."""


def missing_key(model: str, variables: Sequence[str]) -> str:
    """The message for a call to ``model`` that has no API key to send.

    Args:
        model: the model string.
        variables: the provider's own variables that would hold the key.
    """
    own = " or ".join(variables)
    return (
        f"no API key for model {model!r}: set ORACLE_API_KEY (or pass --api-key), or {own}; "
        "a local server that needs no key still wants one set (any value)"
    )


def stream_failed(model: str, error: BaseException) -> ModelError:
    """The :class:`ModelError` for a stream from ``model`` that broke after it started."""
    return ModelError(f"model stream from {model!r} failed: {type(error).__name__}: {error}")


class ProviderModel(Model):
    """A model reached over the network: the settings every provider client takes.

    Args:
        model: the model string.
        api_base: the server's base URL.
        api_key: the key.
        num_retries: retries for errors that may pass (429, 5xx, timeouts, connections).
        timeout: seconds one attempt may take.
        options: more request options (``temperature``, ...).
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        num_retries: int = 2,
        timeout: float = 120.0,
        **options: Any,
    ) -> None:
        self.name = model
        self.api_base = api_base
        self.api_key = api_key
        self.num_retries = num_retries
        self.timeout = timeout
        self.options = options
        self._prepare()

    def _prepare(self) -> None:
        """Set up what a subclass keeps besides the settings (called by ``__init__``)."""


async def relay_stream(
    model: str,
    chunks: AsyncIterator[Any],
    close: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[str | ModelResponse]:
    """The text pieces of a provider's stream of chunks, then the whole :class:`ModelResponse`.

    Failures while reading become a :class:`~oracle_core.ModelError` naming ``model``;
    ``close`` (when given) runs however the stream ends.
    """
    answer = StreamAssembler()
    try:
        async for chunk in chunks:
            text = answer.add(chunk)
            if text:
                yield text
    except ModelError:
        raise
    except Exception as error:
        raise stream_failed(model, error) from error
    finally:
        if close is not None:
            await close()
    yield answer.response()
