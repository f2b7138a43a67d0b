"""Which ``Host`` names the server answers to: the guard against DNS rebinding.

A web page on any site can point its own name at 127.0.0.1 (DNS rebinding) and then drive a
server on the visitor's machine as if it were same-origin; the browser still sends the
page's name in ``Host``. So a server without a token answers only to loopback names. A
server with a token is safe from such pages (they cannot read the token) and answers to any
name, unless the operator lists the names it should answer to.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from oracle_core.server.auth import TOKEN_ENV
from oracle_core.server.errors import error_response

ALLOWED_HOSTS_ENV = "ORACLE_ALLOWED_HOSTS"
"""The environment variable listing the host names a server with a token answers to."""

LOOPBACK_NAMES = "localhost, 127.0.0.1 (any 127.x.y.z) and [::1]"
"""The loopback names, as error messages show them."""

_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_WILDCARD = re.compile(rf"\*\.{_LABEL}(?:\.{_LABEL})+")
_PORT = re.compile(r"[0-9]{1,5}")


def host_name(header: str) -> str | None:
    """The host name in a ``Host`` header value, lower-cased and without its port.

    An IPv6 address keeps its brackets, in its compressed form (``[::1]``). Anything that is
    not a plain DNS name, IPv4 address or bracketed IPv6 address, with an optional numeric
    port, gives ``None``: spaces, user info, a trailing dot, non-ASCII look-alikes, a bare
    IPv6 address, an empty or out-of-range port.
    """
    if not header.isascii():  # before lower(): "\u212a".lower() is an ASCII "k"
        return None
    if header.startswith("["):
        inside, bracket, rest = header[1:].partition("]")
        if not bracket or not _valid_port_suffix(rest):
            return None
        try:
            return f"[{ipaddress.IPv6Address(inside).compressed}]"
        except ValueError:
            return None
    name, colon, port = header.partition(":")
    if colon and not _valid_port_suffix(f":{port}"):
        return None
    name = name.lower()
    return name if _NAME.fullmatch(name) else None


def _valid_port_suffix(rest: str) -> bool:
    if not rest:
        return True
    port = rest[1:]
    return rest[0] == ":" and bool(_PORT.fullmatch(port)) and int(port) <= 65535


def is_loopback_name(name: str) -> bool:
    """Whether ``name`` (as :func:`host_name` returns it) is ``localhost``, 127.x.y.z or ``[::1]``."""
    if name in ("localhost", "[::1]"):
        return True
    try:
        return ipaddress.IPv4Address(name).is_loopback
    except ValueError:
        return False


def parse_allowed_hosts(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """The host names in ``value`` (``ORACLE_ALLOWED_HOSTS``: comma-separated).

    Each entry is a name (``oracle.example.com``), an IP address (IPv6 in brackets), a
    wildcard for every subdomain (``*.example.com``), or ``*`` for any name. Ports are not
    part of an entry: any port matches.

    Raises:
        ValueError: an entry is none of these; the message names it.
    """
    entries = value.split(",") if isinstance(value, str) else list(value or ())
    hosts: list[str] = []
    for entry in (e.strip().lower() for e in entries):
        if not entry:
            continue
        name = _allowed_entry(entry)
        if name is None:
            raise ValueError(
                f"{ALLOWED_HOSTS_ENV}: {entry!r} is not a host name; list names such as "
                "oracle.example.com, *.example.com, 10.0.0.5 or [::1], without ports, "
                "comma-separated (or * for any name)"
            )
        hosts.append(name)
    return tuple(hosts)


def _allowed_entry(entry: str) -> str | None:
    if entry == "*" or _WILDCARD.fullmatch(entry):
        return entry
    has_port = not entry.endswith("]") if entry.startswith("[") else ":" in entry
    return None if has_port else host_name(entry)


@dataclass(frozen=True)
class HostPolicy:
    """The ``Host`` names a server answers to.

    Attributes:
        allowed: the names a server with a token answers to (``*`` for any, ``*.domain``
            for subdomains); ``None``: loopback names only, the rule without a token.
    """

    allowed: tuple[str, ...] | None = None

    @classmethod
    def for_server(
        cls, *, token: bool, allowed_hosts: str | Iterable[str] | None = None
    ) -> HostPolicy:
        """The policy of a server with or without a token.

        Raises:
            ValueError: ``allowed_hosts`` is given without a token (such a server answers
                only to loopback names), or holds an entry that is not a host name.
        """
        hosts = parse_allowed_hosts(allowed_hosts)
        if not token:
            if hosts:
                raise ValueError(
                    f"{ALLOWED_HOSTS_ENV} (--allowed-hosts) needs {TOKEN_ENV}: without a "
                    f"token the server answers only to {LOOPBACK_NAMES}, so that web pages "
                    f"on other sites cannot drive it; set {TOKEN_ENV}, or unset the list"
                )
            return cls(None)
        return cls(hosts or ("*",))

    def allows(self, name: str) -> bool:
        """Whether the server answers to ``name`` (as :func:`host_name` returns it)."""
        if self.allowed is None:
            return is_loopback_name(name)
        return any(
            entry == "*" or entry == name or (entry.startswith("*.") and name.endswith(entry[1:]))
            for entry in self.allowed
        )

    def refusal(self, headers: list[str]) -> str | None:
        """Why a request with these ``Host`` header values is refused, or ``None``."""
        if len(headers) != 1:
            count = "no Host header" if not headers else f"{len(headers)} Host headers"
            return f"the request has {count}: send exactly one (HTTP/1.1 requires it)"
        name = host_name(headers[0])
        if name is not None and self.allows(name):
            return None
        shown = repr(headers[0][:100])
        if self.allowed is None:
            return (
                f"this server answers only to {LOOPBACK_NAMES}, not to the host {shown}: "
                f"without {TOKEN_ENV} a web page on another site could drive it (DNS "
                f"rebinding). Open it by a loopback name, or set {TOKEN_ENV} (and list the "
                f"names it should answer to in {ALLOWED_HOSTS_ENV} or --allowed-hosts)"
            )
        return (
            f"this server does not answer to the host {shown}; it answers to "
            f"{', '.join(self.allowed)}: add the name to {ALLOWED_HOSTS_ENV} (or --allowed-hosts)"
        )


class HostGuardMiddleware:
    """Answers 421 (``host_not_allowed``) to a request whose ``Host`` the policy refuses.

    It sits outside every other layer, so a refused request reaches no route, no plugin and
    no run.
    """

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        hosts = [v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == b"host"]
        reason = self.policy.refusal(hosts)
        if reason is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "host not allowed"})
        else:
            response = error_response(421, "host_not_allowed", reason, {"Connection": "close"})
            await response(scope, receive, send)
