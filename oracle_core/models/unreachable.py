"""A model server that does not answer, said plainly: its URL, the setting that points at it,
and what went wrong, on both client paths.

Before, a dead local server read ``APIConnectionError: Connection error.`` (the direct path)
or ``failed (HTTP 500): ... Cannot connect to host localhost:11434 ssl:<ssl.SSLContext object
at 0x7f...>`` (litellm, which gives a failed connection the status 500): no URL on one path,
a status no server sent and an object's repr on the other. Both paths now say the same:

    model call to 'openai/llama3' failed: cannot connect to the model server at
    http://127.0.0.1:8080/v1 (connection refused: nothing listens there); that URL is
    ORACLE_API_BASE (or --api-base): check that a server runs there, or correct it
"""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from oracle_core.errors import ModelError

ORACLE_API_BASE = "ORACLE_API_BASE (or --api-base)"
"""How the operator's own setting of the model server's URL is named in messages."""

_TIMEOUTS = frozenset({"Timeout", "APITimeoutError", "TimeoutError", "TimeoutException"})
_CONNECTIONS = frozenset(
    {"APIConnectionError", "ConnectError", "ConnectionError", "RemoteProtocolError",
     "ClientConnectorError", "ServerDisconnectedError", "ClientOSError"}
)  # fmt: skip
_OBJECT_REPR = re.compile(r"\s*\bssl:<[^<>]*>|<([\w.]+) object at 0x[0-9a-fA-F]+>")
_CHAIN_DEPTH = 8  # a cause chain is short; a cycle must not hang


class ModelUnreachableError(ModelError):
    """The model server could not be reached, or did not answer in time.

    Attributes:
        model: the model string.
        url: the server's URL as the oracle knows it (``None`` when not even litellm says).
        setting: what set that URL (``ORACLE_API_BASE (or --api-base)``, a provider's
            variable, or the provider's default).
        timed_out: it was reached (or tried) but did not answer within the timeout.
    """

    def __init__(
        self, message: str, *, model: str, url: str | None, setting: str, timed_out: bool
    ) -> None:
        super().__init__(message)
        self.model = model
        self.url = url
        self.setting = setting
        self.timed_out = timed_out


@dataclass(frozen=True)
class ModelServer:
    """Where a model's calls go, as far as the oracle can tell before it calls.

    Attributes:
        url: the base URL (``None``: the provider's default, which the client library keeps).
        setting: what chose it, as a person would set it (see :class:`ModelUnreachableError`).
    """

    url: str | None
    setting: str


def causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and what caused it, outermost first (a few levels at most)."""
    seen: BaseException | None = error
    for _ in range(_CHAIN_DEPTH):
        if seen is None:
            return
        yield seen
        seen = seen.__cause__ or seen.__context__


def _names(error: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(error).__mro__}


def unreachable_kind(error: BaseException) -> str | None:
    """``"timeout"`` or ``"connection"`` when ``error`` (or what caused it) says the server did
    not answer, else ``None``.

    Read through the cause chain: litellm reports a refused connection to an OpenAI-compatible
    server as an ``InternalServerError`` with status 500, caused by the SDK's
    ``APIConnectionError``; no server sent that 500.
    """
    for found in causes(error):
        names = _names(found)
        if names & _TIMEOUTS:
            return "timeout"
        if names & _CONNECTIONS or isinstance(found, ConnectionError | socket.gaierror):
            return "connection"
    return None


def scrub(text: str) -> str:
    """``text`` without the reprs of objects (``ssl:<ssl.SSLContext object at 0x7f...>``),
    which say nothing to a person and differ on every run."""
    return _OBJECT_REPR.sub(lambda m: m.group(1) or "", text)


def _reason(error: BaseException) -> str:
    """Why the connection failed, from the innermost cause that says."""
    chain = list(causes(error))
    for found in reversed(chain):
        if isinstance(found, ConnectionRefusedError):
            return "connection refused: nothing listens there"
        if isinstance(found, socket.gaierror):
            return "its host name does not resolve"
        if isinstance(found, ssl.SSLError):
            return f"TLS failed: {scrub(str(found))}"
        if isinstance(found, ConnectionResetError):
            return "the connection was reset"
        if _names(found) & {"RemoteProtocolError", "ServerDisconnectedError"}:
            return "it closed the connection without answering"
    innermost = scrub(str(chain[-1])).strip()
    return innermost or type(chain[-1]).__name__


def _host_of(error: BaseException) -> str | None:
    """``host:port`` from an aiohttp connection error in the chain (litellm's transport)."""
    for found in causes(error):
        host, port = getattr(found, "host", None), getattr(found, "port", None)
        if isinstance(host, str) and host and isinstance(port, int):
            return f"{host}:{port}"
    return None


def unreachable(
    model: str, error: BaseException, server: ModelServer, timeout: float | None = None
) -> ModelUnreachableError | None:
    """The error for a call to ``model`` whose server did not answer, else ``None``.

    Args:
        model: the model string.
        error: what the client library raised.
        server: where the call went.
        timeout: the seconds an attempt had, said when it timed out.
    """
    kind = unreachable_kind(error)
    if kind is None:
        return None
    url = server.url or _host_of(error)
    where = f"the model server at {url}" if url else "the model server"
    source = f"that URL is {server.setting}" if url else f"it is at {server.setting}"
    if kind == "timeout":
        within = f" within {timeout:g} s" if timeout else " in time"
        message = (
            f"model call to {model!r} failed: {where} did not answer{within}; {source}: check "
            "that the server is up and not overloaded, or allow more time with --timeout "
            "(or ORACLE_MODEL_TIMEOUT)"
        )
    else:
        fix = (
            "correct it"
            if server.setting == ORACLE_API_BASE
            else f"point {ORACLE_API_BASE} at one that does"
        )
        message = (
            f"model call to {model!r} failed: cannot connect to {where} ({_reason(error)}); "
            f"{source}: check that a server runs there, or {fix}"
        )
    return ModelUnreachableError(
        message, model=model, url=url, setting=server.setting, timed_out=kind == "timeout"
    )


def provider_server(provider: str, default: str | None, env: Mapping[str, str]) -> ModelServer:
    """Where a provider's calls go when the operator set no URL: the provider's own
    variable (``OLLAMA_API_BASE``) when set, else the client library's ``default``."""
    for variable in (f"{provider.upper()}_API_BASE", f"{provider.upper()}_BASE_URL"):
        if env.get(variable):
            return ModelServer(env[variable], variable)
    return ModelServer(default, f"litellm's default for {provider}")
