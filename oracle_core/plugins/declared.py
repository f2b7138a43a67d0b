"""What a plugin's manifest declares, read before the manifest is validated.

Assembly needs a plugin's name and config model while its manifest may still be wrong (to
read its configuration, to label its hook calls); tools such as ``check_plugin`` need a
plugin's name before any oracle assembles it (:func:`declared_name`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from oracle_core.authoring.host import PluginHost
from oracle_core.plugins.candidate import source_for_object
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.hooks import HookImpls, call_plugin_hook, new_plugin_manager
from oracle_core.plugins.validate import HookResults
from oracle_core.plugins.worker import HookWorker
from oracle_core.settings import DEFAULT_HOOK_TIMEOUT


def _declared(results: HookResults, field: str) -> Any:
    """``field`` of the plugin's one manifest as given (valid or not); ``None`` without one."""
    manifests = results.results.get("oracle_manifest") or []
    if len(manifests) != 1:
        return None
    raw = manifests[0]
    return raw.get(field) if isinstance(raw, dict) else getattr(raw, field, None)


def manifest_name(results: HookResults, source: PluginSource) -> str:
    """The plugin's name as its manifest gives it (valid or not), else its source's name."""
    name = _declared(results, "name")
    return name if isinstance(name, str) and name else source.name


def manifest_config(results: HookResults) -> type[BaseModel] | None:
    """The config model the plugin's manifest declares (a bad one is the manifest's problem)."""
    model = _declared(results, "config")
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def declared_name(
    obj: Any, *, timeout: float = DEFAULT_HOOK_TIMEOUT, host: PluginHost | None = None
) -> str:
    """The name ``obj``'s manifest gives (valid or not), else its object's name.

    Calls its ``oracle_manifest`` through a scratch plugin manager, for tools that need a
    plugin's name before an oracle assembles it (``check_plugin`` writing its config);
    a manifest hook that asks for ``oracle`` gets ``host``.
    """
    source = source_for_object(obj)
    manager = new_plugin_manager()
    worker = HookWorker("oracle-manifest")
    results = HookResults()
    try:
        manager.register(obj)
        found = HookImpls(manager, ["oracle_manifest"]).of(obj, "oracle_manifest")
        results.results["oracle_manifest"] = worker.run(
            lambda _: call_plugin_hook(manager, "oracle_manifest", found, {"oracle": host}),
            timeout,
        )
    except Exception:
        return source.name  # assembly reports why
    finally:
        worker.close()
    return manifest_name(results, source)
