"""Plugins' prompts and resources, as the MCP export lists, renders and reads them.

Asked of the plugins once, when the oracle is first served over MCP (:meth:`Offers.collect`:
each plugin's ``oracle_prompts`` and ``oracle_resources``, on the hook worker under the hook
timeout); a hook that raises, overruns or returns anything else leaves that plugin's items
out, logged naming the plugin and the hook. A name (or URI) an earlier plugin already has
leaves the later item out, logged naming both plugins.

What one session is shown follows the capability gate's rule for tools
(:class:`~oracle_core.server.mcp.surface.ThreadView`): an ``always`` or ``silent`` plugin's
items at once, an ``on-demand`` plugin's once the session's thread loaded it, a plugin that
left the oracle (its startup failed) none. A get or read of an item the session is not shown
is refused as the gate refuses a hidden tool: it names the capability to load when loading
would show it, and otherwise says the item does not exist, naming nothing hidden.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from oracle_core.authoring.host import PluginHost, PluginStates
from oracle_core.authoring.prompts import Prompt, Resource, Role
from oracle_core.capabilities.meta_tools.results import echo
from oracle_core.plugins.core_tools import LIST_CAPABILITIES, LOAD_CAPABILITY
from oracle_core.plugins.hooks import EXPORT_HOOKS, HookImpls, call_plugin_hook
from oracle_core.plugins.registry import Plugin
from oracle_core.plugins.worker import HookTimeout, HookWorker
from oracle_core.run.executor import cap
from oracle_core.server.mcp.surface import ThreadView

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle

log = logging.getLogger("oracle_core.plugins.mcp")

T = TypeVar("T", Prompt, Resource)


class OfferError(Exception):
    """A get or read the client cannot have: refused, or the plugin's function failed.

    Attributes:
        code: the JSON-RPC error code to answer with.
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Offered(Generic[T]):
    """One plugin's prompt or resource, with the plugin that offered it.

    Attributes:
        item: the prompt or resource.
        plugin: the plugin's name.
        owner: the plugin's hook object when it was asked (a plugin replaced since by
            another object of the same name offers nothing any more).
    """

    item: T
    plugin: str
    owner: object = field(repr=False)


class _Host(PluginHost):
    """What the export hooks get as ``oracle``: the oracle's settings and plugin state."""

    def __init__(self, oracle: Oracle) -> None:
        super().__init__(oracle.settings, PluginStates())
        self._oracle = oracle

    def plugin_state(self, plugin: str) -> dict[str, Any]:
        """The plugin's per-oracle state dict (the one its tools and hooks see)."""
        return self._oracle.plugin_state(plugin)


@dataclass(frozen=True)
class Offers:
    """Every plugin's prompts by name and resources by URI, in registry order.

    Attributes:
        prompts: the prompts, by name.
        resources: the resources, by URI.
    """

    prompts: Mapping[str, Offered[Prompt]] = field(default_factory=dict)
    resources: Mapping[str, Offered[Resource]] = field(default_factory=dict)

    @classmethod
    async def collect(cls, oracle: Oracle) -> Offers:
        """Ask every plugin of ``oracle`` for its prompts and resources (once per server)."""
        manager = oracle.plugin_manager
        impls = HookImpls(manager, EXPORT_HOOKS)
        host = _Host(oracle)
        seconds = oracle.settings.hook_timeout
        prompts: dict[str, Offered[Prompt]] = {}
        resources: dict[str, Offered[Resource]] = {}
        worker = HookWorker("oracle-mcp-offers")
        try:
            for plugin in oracle.registry:
                for hook, kind, into in (
                    ("oracle_prompts", Prompt, prompts),
                    ("oracle_resources", Resource, resources),
                ):
                    found = impls.of(plugin.obj, hook)
                    if not found:
                        continue
                    items = await _ask(worker, manager, hook, found, plugin, host, seconds, kind)
                    for item in items:
                        _add(into, item, plugin, kind)
        finally:
            worker.close()
        return cls(prompts, resources)

    def listed_prompts(self, view: ThreadView) -> list[Offered[Prompt]]:
        """The prompts ``view`` shows, in the order of the tools (see :func:`_listed`)."""
        return _listed(self.prompts.values(), view)

    def listed_resources(self, view: ThreadView) -> list[Offered[Resource]]:
        """The resources ``view`` shows, in the order of the tools (see :func:`_listed`)."""
        return _listed(self.resources.values(), view)

    def prompt(self, name: str, view: ThreadView) -> Offered[Prompt]:
        """The prompt ``name`` if ``view`` shows it.

        Raises:
            OfferError: refused, as the gate refuses a hidden tool.
        """
        found = self.prompts.get(name) if isinstance(name, str) else None
        if found is not None and _shown(found, view):
            return found
        raise OfferError(_INVALID_PARAMS, _refusal("Prompt", echo(str(name)), found, view, "get"))

    def resource(self, uri: str, view: ThreadView) -> Offered[Resource]:
        """The resource ``uri`` if ``view`` shows it.

        Raises:
            OfferError: refused, as the gate refuses a hidden tool.
        """
        found = self.resources.get(uri) if isinstance(uri, str) else None
        if found is not None and _shown(found, view):
            return found
        message = _refusal("Resource", echo(str(uri)), found, view, "read")
        raise OfferError(_RESOURCE_NOT_FOUND, message)


_INVALID_PARAMS = -32602
_INTERNAL_ERROR = -32603
_RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for an unknown resource


def _listed(items: Iterable[Offered[T]], view: ThreadView) -> list[Offered[T]]:
    """The items ``view`` shows as the gate orders tools: the standing plugins' first (in
    registry order), then the loaded plugins' in load order, so a load only appends."""
    loads = {name: index for index, name in enumerate(view.loaded)}
    shown = [o for o in items if _shown(o, view)]
    return sorted(shown, key=lambda o: loads.get(o.plugin, -1))  # stable: registry order kept


def _shown(offered: Offered[Any], view: ThreadView) -> bool:
    plugin = view.registry.get(offered.plugin)
    return plugin is not None and plugin.obj is offered.owner and view.shows(offered.plugin)


def _refusal(kind: str, shown: str, found: Offered[Any] | None, view: ThreadView, verb: str) -> str:
    """What a refused get or read says: the capability to load, or that it does not exist.

    Only a plugin the client could load itself is ever named, as for a hidden tool.
    """
    if found is None or found.owner is not getattr(view.registry.get(found.plugin), "obj", None):
        found = None
    if found is None or not view.loadable(found.plugin):
        return (
            f"{kind} {shown} does not exist. Call {LIST_CAPABILITIES}() to see the capabilities "
            f"you can load, then {LOAD_CAPABILITY} to get what they offer."
        )
    load = json.dumps({"names": [found.plugin]})
    return f"{kind} {shown} is not available yet: call {LOAD_CAPABILITY}({load}) first, then {verb} it again."


async def _ask(
    worker: HookWorker,
    manager: Any,
    hook: str,
    impls: Sequence[Any],
    plugin: Plugin,
    host: PluginHost,
    seconds: float,
    kind: type,
) -> list[Any]:
    """One plugin's answer to ``hook``: its items, or none (logged naming the plugin)."""

    def call() -> list[Any]:
        return call_plugin_hook(manager, hook, impls, {"config": plugin.config, "oracle": host})

    try:
        results = await worker.run_async(call, hook, seconds)
    except HookTimeout:
        log.error(
            "plugin %s: hook %s did not return within %g s: its %ss are left out (raise "
            "ORACLE_HOOK_TIMEOUT, or build them faster)", plugin.name, hook, seconds,
            kind.__name__.lower(),
        )  # fmt: skip
        return []
    except Exception as error:
        log.error(
            "plugin %s: hook %s raised %s: %s; its %ss are left out",
            plugin.name, hook, type(error).__name__, error, kind.__name__.lower(),
        )  # fmt: skip
        return []
    items: list[Any] = []
    for result in results:
        for item in result if isinstance(result, list | tuple) else [result]:
            if not isinstance(item, kind):
                log.error(
                    "plugin %s: hook %s returned a %s where a %s belongs: return a list of %s; "
                    "its %ss are left out", plugin.name, hook, type(item).__name__,
                    kind.__name__, kind.__name__, kind.__name__.lower(),
                )  # fmt: skip
                return []
            items.append(item)
    return items


def _add(into: dict[str, Any], item: Any, plugin: Plugin, kind: type) -> None:
    key = item.name if kind is Prompt else item.uri
    taken = into.get(key)
    if taken is not None:
        what = "name" if kind is Prompt else "URI"
        log.error(
            "plugin %s: %s %r is left out: plugin %s offers a %s of that %s; rename one",
            plugin.name, kind.__name__.lower(), key, taken.plugin, kind.__name__.lower(), what,
        )  # fmt: skip
        return
    into[key] = Offered(item, plugin.name, plugin.obj)


async def render(offered: Offered[Prompt], arguments: Mapping[str, str] | None,
                 seconds: float, limit: int) -> list[tuple[Role, str]]:  # fmt: skip
    """Render a prompt with the client's arguments: its messages as (role, text).

    Raises:
        OfferError: an argument is missing or unknown, or the prompt failed (naming its
            plugin) or returned something that is not messages.
    """
    prompt = offered.item
    given = dict(arguments or {})
    known = {a.name for a in prompt.arguments}
    unknown = sorted(set(given) - known)
    if unknown:
        takes = ", ".join(sorted(known)) or "no arguments"
        raise OfferError(
            _INVALID_PARAMS,
            f"prompt {prompt.name!r} has no argument {', '.join(map(repr, unknown))} "
            f"(it takes: {takes})",
        )
    missing = [a.name for a in prompt.arguments if a.required and a.name not in given]
    if missing:
        raise OfferError(
            _INVALID_PARAMS,
            f"prompt {prompt.name!r} needs the argument{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(repr, missing))}",
        )
    value = await _run(prompt.render, given, seconds, f"prompt {prompt.name!r}", offered.plugin)
    messages = _messages(value)
    if messages is None:
        log.error("plugin %s: prompt %r returned a %s, not messages",
                  offered.plugin, prompt.name, type(value).__name__)  # fmt: skip
        raise OfferError(
            _INTERNAL_ERROR,
            f"prompt {prompt.name!r} of plugin {offered.plugin!r} returned a "
            f'{type(value).__name__}: its render must return a string or a list of {{"role": '
            '"user" or "assistant", "content": "..."}',
        )
    return [(role, cap(text, limit)) for role, text in messages]


async def read(offered: Offered[Resource], seconds: float, limit: int) -> str | bytes:
    """Read a resource: its text, or its bytes.

    Raises:
        OfferError: the read failed (naming the plugin), returned neither text nor bytes,
            or more than ``limit`` bytes.
    """
    resource = offered.item
    value = await _run(resource.read, {}, seconds, f"resource {resource.uri!r}", offered.plugin)
    if isinstance(value, str):
        return cap(value, limit)
    if isinstance(value, bytes | bytearray):
        if len(value) > limit:
            raise OfferError(
                _INTERNAL_ERROR,
                f"resource {resource.uri!r} of plugin {offered.plugin!r} is {len(value)} bytes, "
                f"over the limit of {limit}",
            )
        return bytes(value)
    log.error("plugin %s: resource %r read a %s, not str or bytes",
              offered.plugin, resource.uri, type(value).__name__)  # fmt: skip
    raise OfferError(
        _INTERNAL_ERROR,
        f"resource {resource.uri!r} of plugin {offered.plugin!r} read a "
        f"{type(value).__name__}: its read must return str or bytes",
    )


def blob(data: bytes) -> str:
    """Bytes as MCP sends a blob: base64."""
    return base64.b64encode(data).decode("ascii")


async def _run(
    function: Callable[..., Any], arguments: Mapping[str, Any], seconds: float, what: str,
    plugin: str,
) -> Any:  # fmt: skip
    """Call a plugin's function (sync on a worker thread, or async) within ``seconds``."""
    try:
        async with asyncio.timeout(seconds):
            if inspect.iscoroutinefunction(function):
                return await function(**arguments)
            value = await asyncio.to_thread(function, **arguments)
            return await value if inspect.isawaitable(value) else value
    except TimeoutError:
        raise OfferError(
            _INTERNAL_ERROR, f"{what} of plugin {plugin!r} timed out after {seconds:g} s"
        ) from None
    except Exception as error:
        log.exception("%s of plugin %s raised", what, plugin)
        raise OfferError(
            _INTERNAL_ERROR, f"{what} of plugin {plugin!r} failed: {type(error).__name__}: {error}"
        ) from None


def _messages(value: Any) -> list[tuple[Role, str]] | None:
    """A render's value as (role, text) pairs, or ``None`` when it is not messages."""
    if isinstance(value, str):
        return [("user", value)]
    if not isinstance(value, list | tuple):
        return None
    messages: list[tuple[Role, str]] = []
    for message in value:
        if not isinstance(message, Mapping):
            return None
        role, content = message.get("role"), message.get("content")
        if not isinstance(content, str):
            return None
        if role == "user":
            messages.append(("user", content))
        elif role == "assistant":
            messages.append(("assistant", content))
        else:
            return None
    return messages
