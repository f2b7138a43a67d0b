"""Bearer-token authentication, and the rule that a public bind needs a token."""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from starlette.requests import HTTPConnection

from oracle_core.server.errors import ApiError

TOKEN_ENV = "ORACLE_API_TOKEN"
"""The environment variable holding the server's token(s), comma-separated."""


def parse_tokens(value: str | None) -> tuple[str, ...]:
    """The tokens in ``value`` (``ORACLE_API_TOKEN``): comma-separated, blanks dropped."""
    return tuple(t.strip() for t in (value or "").split(",") if t.strip())


class BearerAuth:
    """Checks ``Authorization: Bearer <token>`` against the server's tokens.

    With no tokens every request passes (an operator who binds to loopback only may choose
    that); with one or more, any of them is accepted. Tokens are compared in constant time.

    Args:
        tokens: the accepted tokens; a single string is read as comma-separated tokens.
    """

    def __init__(self, tokens: Iterable[str] | str = ()) -> None:
        if isinstance(tokens, str):
            tokens = parse_tokens(tokens)
        self._tokens = tuple(t.encode() for t in tokens if t)

    @property
    def enabled(self) -> bool:
        """Whether requests must carry a token."""
        return bool(self._tokens)

    def check(self, connection: HTTPConnection) -> None:
        """Raise a 401 :class:`ApiError` unless the request carries an accepted token."""
        if not self._tokens:
            return
        header = connection.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if not header:
            raise _unauthorized(
                "missing bearer token: send the header Authorization: Bearer <token>"
            )
        if scheme.lower() != "bearer" or not token.strip():
            raise _unauthorized("the Authorization header must be: Bearer <token>")
        given = token.strip().encode()
        # Check every token so the time taken does not tell which one came close.
        matches = [hmac.compare_digest(given, t) for t in self._tokens]
        if not any(matches):
            raise _unauthorized("invalid bearer token")

    async def __call__(self, connection: HTTPConnection) -> None:
        """The check as a FastAPI dependency."""
        self.check(connection)


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message, {"WWW-Authenticate": "Bearer"})
