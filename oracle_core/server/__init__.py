"""``oracle serve``: the oracle as an HTTP service (needs ``pip install 'oracle-core-runtime[server]'``).

    from oracle_core.server import create_app
    app = create_app(Oracle(), tokens=["s3cret"])   # any ASGI server can run it

See docs/server.md for the endpoints, auth, limits, the SSE format and plugin routes.

The names below are imported when first used (PEP 562), not with the package: ``oracle
mcp`` imports :mod:`oracle_core.server.mcp.export` from here, and must not pay for FastAPI
and every router just to serve stdio.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oracle_core.server.app import create_app
    from oracle_core.server.auth import BearerAuth, parse_tokens
    from oracle_core.server.limits import Limits
    from oracle_core.values.loopback import is_loopback_host as is_loopback

_EXPORTS = {
    "BearerAuth": ("oracle_core.server.auth", "BearerAuth"),
    "Limits": ("oracle_core.server.limits", "Limits"),
    "create_app": ("oracle_core.server.app", "create_app"),
    "is_loopback": ("oracle_core.values.loopback", "is_loopback_host"),
    "parse_tokens": ("oracle_core.server.auth", "parse_tokens"),
}
"""Each public name: the module that defines it and its name there."""


def __getattr__(name: str) -> Any:
    found = _EXPORTS.get(name)
    if found is None:
        raise AttributeError(f"module 'oracle_core.server' has no attribute {name!r}")
    value = getattr(importlib.import_module(found[0]), found[1])
    globals()[name] = value  # bound as an eager import would: later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = ["BearerAuth", "Limits", "create_app", "is_loopback", "parse_tokens"]
