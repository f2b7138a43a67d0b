"""HTTP routes a plugin contributes through ``oracle_routes``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

Endpoint = Callable[[Any], Awaitable[Any]]
"""An async function taking a Starlette ``Request`` and returning a ``Response`` (or a
JSON-serialisable value, which the server turns into a JSON response)."""


@dataclass(frozen=True)
class Route:
    """One HTTP route of a plugin, mounted under ``/plugins/<plugin-name>/``.

    Attributes:
        path: the path below the plugin's prefix, starting with ``/`` (``"/"`` is the prefix).
        endpoint: the handler; see :data:`Endpoint`.
        methods: the HTTP methods it answers.
        name: a name for URL building; defaults to the endpoint's name.
        public: serve it without the server's bearer token.
    """

    path: str
    endpoint: Endpoint
    methods: tuple[str, ...] = ("GET",)
    name: str | None = None
    public: bool = False

    def __post_init__(self) -> None:
        if not self.path.startswith("/"):
            raise ValueError(f"route path {self.path!r} must start with '/'")
