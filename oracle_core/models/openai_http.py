"""The direct path's HTTP client: one OpenAI-compatible chat completions request over httpx.

The direct path posts a body that is already plain JSON and reads back JSON, or server-sent
events when it streams. The openai SDK did this for it until its import became the largest
part of an ``oracle ask``: ``import openai`` builds the pydantic models of every endpoint
the SDK knows (about 650 classes), more CPU than the rest of a one-question turn. httpx is
what the SDK sends with; this module keeps the SDK's observable behaviour where the oracle
shows it:

- errors have the SDK's class names and texts (``RateLimitError: Error code: 429 - ...``,
  ``APIConnectionError: Connection error.``, ``APITimeoutError: Request timed out.``); a
  status error carries ``status_code`` and the answer's ``error`` object as ``body``, so a
  failure reads the same on both client paths
  (:func:`~oracle_core.models.completions.call_failed`; ``tests/models/test_openai_http.py`` reads
  the same bytes with the SDK and compares);
- the request: ``POST {base_url}/chat/completions`` with ``Authorization: Bearer <key>``,
  JSON in and out, redirects followed, proxies from the environment, one timeout for every
  phase of an attempt; no retries (the model retries, :mod:`oracle_core.models.retries`);
- a stream ends at ``data: [DONE]`` or when the server closes it (an event cut off before
  its blank line is dropped, as the standard says); an event whose data holds an ``error``
  raises :class:`APIError` with its message.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any

import httpx

from oracle_core.version import __version__

__all__ = [
    "OPENAI_BASE_URL",
    "APIConnectionError",
    "APIError",
    "APIStatusError",
    "APITimeoutError",
    "ChatCompletions",
    "EventStream",
    "status_error",
]

OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where requests go when no base URL is given."""


class APIError(Exception):
    """A request that failed, or a stream whose server reported an error.

    Attributes:
        message: what went wrong.
        body: the answer's ``error`` object (or the whole answer, or its text), when there
            was one.
    """

    def __init__(self, message: str, body: object | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.body = body


class APIStatusError(APIError):
    """The server answered with an HTTP error status (``status_code``)."""

    def __init__(self, message: str, status_code: int, body: object | None = None) -> None:
        super().__init__(message, body)
        self.status_code = status_code


class APIConnectionError(APIError):
    """The server could not be reached, or the connection broke before an answer."""

    def __init__(self, message: str = "Connection error.") -> None:
        super().__init__(message)


class APITimeoutError(APIConnectionError):
    """An attempt took longer than its timeout."""

    def __init__(self) -> None:
        super().__init__("Request timed out.")


# The openai SDK's classes for the statuses it names; every other status is APIStatusError.
_BY_STATUS = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}
_CLASSES = {
    name: type(name, (APIStatusError,), {"__doc__": f"HTTP {status}.", "__module__": __name__})
    for status, name in _BY_STATUS.items()
}
_CLASSES["InternalServerError"] = type(
    "InternalServerError", (APIStatusError,), {"__doc__": "HTTP 5xx.", "__module__": __name__}
)


def status_error(status: int, text: str) -> APIStatusError:
    """The error of an answer with HTTP ``status`` and body ``text``, as the openai SDK makes it.

    Its ``body`` is the JSON answer's ``error`` object (else the answer, else the text); its
    message ``Error code: <status>``, then `` - <the error's message>`` when it has one.
    """
    message = f"Error code: {status}"
    body: object = text.strip()
    with contextlib.suppress(ValueError):
        body = json.loads(text)
    if isinstance(body, Mapping):
        body = body.get("error", body)
        said = body.get("message") if isinstance(body, Mapping) else None
        if isinstance(said, str) and said:
            message += f" - {said}"
    name = "InternalServerError" if status >= 500 else _BY_STATUS.get(status)
    cls: type[APIStatusError] = _CLASSES[name] if name else APIStatusError
    return cls(message, status, body)


class ChatCompletions:
    """Posts chat completion requests to one OpenAI-compatible server.

    Args:
        api_key: sent as ``Authorization: Bearer <key>``.
        base_url: the server's base URL (default :data:`OPENAI_BASE_URL`).
        timeout: seconds an attempt may take, unless a request gives its own.
    """

    def __init__(self, *, api_key: str, base_url: str | None, timeout: float) -> None:
        headers = {
            "Authorization": f"Bearer {api_key}",
            "Accept": "application/json",
            "User-Agent": f"oracle-core/{__version__}",
        }
        self._http = httpx.AsyncClient(
            base_url=(base_url or OPENAI_BASE_URL).rstrip("/") + "/",
            headers=headers,
            timeout=httpx.Timeout(timeout),
            follow_redirects=True,
        )

    async def create(
        self,
        body: Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        time_limit: float | None = None,
    ) -> dict[str, Any]:
        """The server's answer to ``body`` (not streamed), as JSON.

        ``headers`` are sent besides the client's; ``time_limit`` replaces its timeout (seconds).

        Raises:
            APIStatusError: the server answered with an error status.
            APIConnectionError: the server could not be reached (:class:`APITimeoutError`:
                in time).
            APIError: the answer is not a JSON object.
        """
        response = await self._send(body, headers, time_limit, stream=False)
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise APIError(f"the server's answer is not a JSON object: {response.text[:200]!r}")
        return answer

    async def stream(
        self,
        body: Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        time_limit: float | None = None,
    ) -> EventStream:
        """The server's streamed answer to ``body``, once it answered with a success status.

        ``headers`` and ``time_limit`` as for :meth:`create`.

        Raises:
            APIStatusError: the server answered with an error status.
            APIConnectionError: the server could not be reached (:class:`APITimeoutError`:
                in time).
        """
        return EventStream(await self._send(body, headers, time_limit, stream=True))

    async def _send(
        self,
        body: Mapping[str, Any],
        headers: Mapping[str, str] | None,
        time_limit: float | None,
        *,
        stream: bool,
    ) -> httpx.Response:
        request = self._http.build_request(
            "POST",
            "chat/completions",
            json=body,
            headers=dict(headers or {}),
            timeout=httpx.USE_CLIENT_DEFAULT if time_limit is None else httpx.Timeout(time_limit),
        )
        try:
            response = await self._http.send(request, stream=stream)
        except httpx.TimeoutException as error:
            raise APITimeoutError() from error
        except httpx.TransportError as error:
            raise APIConnectionError() from error
        if response.status_code >= 400:
            try:
                text = (await response.aread()).decode("utf-8", "replace")
            except httpx.HTTPError:
                text = ""
            finally:
                await response.aclose()
            raise status_error(response.status_code, text)
        return response

    async def close(self) -> None:
        """Close the connections. Safe to call twice."""
        await self._http.aclose()


class EventStream:
    """The chunks of a streamed answer: each server-sent event's JSON data, in order.

    Iterate it once; :meth:`close` (or leaving ``async with``) releases the connection.
    """

    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.close()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[Any]:
        data: list[str] = []
        try:
            async for line in self._response.aiter_lines():
                if line:
                    field, _, value = line.partition(":")
                    if field == "data":
                        data.append(value.removeprefix(" "))
                    continue
                if not data:
                    continue
                text, data = "\n".join(data), []
                if text.startswith("[DONE]"):
                    return
                yield _chunk(text)
            # An event the stream ended in, before its blank line, is not dispatched (the
            # server-sent events standard; the openai SDK reads streams so too).
        except httpx.TimeoutException as error:
            raise APITimeoutError() from error
        except httpx.TransportError as error:
            raise APIConnectionError() from error

    async def close(self) -> None:
        """Release the connection. Safe to call twice."""
        await self._response.aclose()


def _chunk(text: str) -> Any:
    """One event's data as JSON; an ``error`` in it raises :class:`APIError`."""
    try:
        chunk = json.loads(text)
    except ValueError as error:
        raise APIError(f"the server sent an event that is not JSON: {text[:200]!r}") from error
    if isinstance(chunk, Mapping) and chunk.get("error"):
        found = chunk["error"]
        message = found.get("message") if isinstance(found, Mapping) else None
        raise APIError(str(message or "An error occurred during streaming"), found)
    return chunk
