"""Reading OpenAI chat completion objects: shared by every model that speaks the OpenAI shape.

litellm and the openai SDK answer with objects of the same shape (``choices[0].message``,
streamed ``choices[0].delta`` pieces, ``usage``), so :class:`~oracle_core.models.litellm.LiteLLMModel`
and :class:`~oracle_core.models.openai.OpenAIModel` turn them into a :class:`ModelResponse`
with the same code, and report the same message, tool calls and usage.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from oracle_core.errors import ModelError
from oracle_core.models.base import Model, assistant_message
from oracle_core.values.messages import ModelResponse, Usage


def usage_from(raw: Any) -> Usage:
    """The :class:`Usage` of a response's or chunk's ``usage`` (an object or a dict)."""
    return Usage(_count(_field(raw, "prompt_tokens")), _count(_field(raw, "completion_tokens")))


def response_from(completion: Any) -> ModelResponse:
    """The :class:`ModelResponse` of a whole (non-streamed) chat completion."""
    message = _field(_first(_field(completion, "choices")), "message")
    tool_calls = []
    for call in _items(_field(message, "tool_calls")):
        read = _CallPieces()
        read.add(call)
        tool_calls.append(read.call())
    content = _field(message, "content")
    return ModelResponse(
        assistant_message(None if content is None else _text(content), tool_calls),
        usage_from(_field(completion, "usage")),
    )


class StreamAssembler:
    """Collects streamed chunks into the whole answer.

    Feed each chunk to :meth:`add`, which returns its text piece (if any); :meth:`response`
    is the assembled :class:`ModelResponse`, tool calls merged by index and the last usage
    reported. A chunk of any shape is read without raising (see :class:`_CallPieces`).
    """

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, _CallPieces] = {}
        self._usage = Usage()

    def add(self, chunk: Any) -> str | None:
        """Take one chunk; return its text piece, or ``None`` when it has none."""
        if _field(chunk, "usage"):
            self._usage = usage_from(_field(chunk, "usage"))
        delta = _field(_first(_field(chunk, "choices")), "delta")
        for piece in _items(_field(delta, "tool_calls")):
            index = _field(piece, "index")
            # A piece without a usable index continues call 0, as one without any always did.
            key = index if type(index) is int else 0
            self._calls.setdefault(key, _CallPieces()).add(piece)
        text = _text(_field(delta, "content"))
        if text:
            self._text.append(text)
            return text
        return None

    def response(self) -> ModelResponse:
        """The whole answer streamed so far."""
        tool_calls = [self._calls[i].call() for i in sorted(self._calls)]
        return ModelResponse(
            assistant_message("".join(self._text) or None, tool_calls), self._usage
        )


class _CallPieces:
    """One tool call read from its pieces, whatever types a provider put in them.

    The run loop and the gate take names, arguments and ids as strings; a provider (or a
    hostile proxy) may send a number, a bool, null, a list or a dict in any field. Each
    field becomes a string here, at the one place the reply is read, so nothing after it
    has to guess. A name piece that is not a string keeps its text but is marked
    (``<not a string: 5>``): a tool named ``5`` must not run from ``"name": 5``, and no tool
    name can hold ``<``, so the gate refuses the call and tells the model what it sent.
    """

    def __init__(self) -> None:
        self.id = ""
        self.name: list[str] = []
        self.arguments: list[str] = []

    def add(self, piece: Any) -> None:
        """Take one piece (an SDK object or a dict; anything else carries nothing)."""
        call_id = _field(piece, "id")
        if call_id is not None and call_id != "":
            self.id = _text(call_id)
        function = _field(piece, "function")
        name = _field(function, "name")
        if isinstance(name, str):
            self.name.append(name)
        elif name is not None:
            self.name.append(f"<not a string: {_text(name)[:_SHOWN]}>")
        self.arguments.append(_text(_field(function, "arguments")))

    def call(self) -> dict[str, Any]:
        """The call in the OpenAI shape, every field a string."""
        function = {"name": "".join(self.name), "arguments": "".join(self.arguments)}
        return {"id": self.id, "type": "function", "function": function}


_SHOWN = 40
"""How much of a name that is not a string its marked name shows."""


def _field(value: Any, key: str) -> Any:
    """``value[key]`` of a dict or ``value.key`` of an SDK object; ``None`` for anything else.

    A method is not a field: ``"text".index`` must not read as a piece's ``index``.
    """
    if isinstance(value, Mapping):
        return value.get(key)
    found = getattr(value, key, None)
    return None if callable(found) else found


def _items(value: Any) -> Sequence[Any]:
    """``value`` when it is a list of pieces; nothing otherwise."""
    return value if isinstance(value, (list, tuple)) else ()


def _first(value: Any) -> Any:
    """The first of a list of choices, ``None`` when there is none."""
    items = _items(value)
    return items[0] if items else None


def _text(value: Any) -> str:
    """A wire value as text: strings as they are, null as nothing, the rest as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)


def _count(value: Any) -> int:
    """A token count: a non-negative number, else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0
    return max(0, int(min(value, 2**62)))


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


RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses a model call is retried after (besides every 5xx), as the OpenAI SDK does."""


def may_pass(error: BaseException) -> bool:
    """Whether a failed model call may pass if made again: a timeout, a lost connection,
    408, 409, 429 or a 5xx. Anything else (a 400, a bad key) fails the same way again."""
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return status in RETRYABLE_STATUSES or status >= 500
    names = {cls.__name__ for cls in type(error).__mro__}
    return bool(names & {"Timeout", "APITimeoutError", "APIConnectionError", "TimeoutError"})


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
