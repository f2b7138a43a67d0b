"""oracle-plugin-audit: an audit trail of every model call and tool call of an oracle.

A ``silent`` plugin: the model never sees it (no tools, no Tier-1 entry, not listed, not
loadable), yet its middleware records every call of every thread in the oracle's own
SQLite file (``audit_model_calls``, ``audit_tool_calls``), and its routes, under
``/plugins/audit/``, let an operator read the trail.
"""

from __future__ import annotations

from oracle_core import Middleware, OracleHandle, PluginHost, PluginManifest, Route, hookimpl
from oracle_plugin_audit.middleware import AuditMiddleware
from oracle_plugin_audit.routes import AuditRoutes
from oracle_plugin_audit.store import AuditStore

__all__ = [
    "NAME",
    "AuditMiddleware",
    "AuditRoutes",
    "AuditStore",
    "oracle_manifest",
    "oracle_middleware",
    "oracle_routes",
    "oracle_shutdown",
    "store_of",
]

NAME = "audit"
"""The plugin's manifest name (its routes live under ``/plugins/audit/``)."""


@hookimpl
def oracle_manifest() -> PluginManifest:
    """Describe the audit plugin: silent, so the model never sees it."""
    return PluginManifest(
        name=NAME,
        title="Audit trail",
        summary="Records every model call and tool call of every thread; read it over HTTP.",
        visibility="silent",
        tags=["audit", "observability", "tokens"],
        category="operations",
    )


@hookimpl
def oracle_middleware(oracle: PluginHost) -> list[Middleware]:
    """Return the middleware that records calls in ``oracle``'s own SQLite file.

    The file is opened on the first call recorded, not here.
    """
    store = oracle.plugin_state(NAME).setdefault("store", AuditStore(oracle.settings.database_path))
    return [AuditMiddleware(store)]


@hookimpl
def oracle_routes(oracle: PluginHost) -> list[Route]:
    """Return the routes that read the trail (they need the server's token)."""

    def store() -> AuditStore:
        found = store_of(oracle)
        if found is None:
            raise RuntimeError("the audit middleware is not part of this oracle")
        return found

    return AuditRoutes(store).routes()


@hookimpl
def oracle_shutdown(oracle: OracleHandle) -> None:
    """Close the oracle's audit connection."""
    store = store_of(oracle)
    if store is not None:
        store.close()


def store_of(oracle: PluginHost | OracleHandle) -> AuditStore | None:
    """The audit store of ``oracle`` (``None`` when the plugin is not part of it).

    It lives in ``oracle.plugin_state("audit")``, so each oracle's state is its own and
    nothing is kept at module level.
    """
    store = oracle.plugin_state(NAME).get("store")
    return store if isinstance(store, AuditStore) else None
