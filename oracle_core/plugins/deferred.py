"""Deferred plugins: a warm start that imports a plugin only when one of its tools is called.

Importing thousands of plugin modules was most of a warm start. A plugin whose previous
start showed that it gives nothing but a manifest and tools needs no import to be listed,
searched, loaded into a thread or shown to a model: the start-up cache
(:mod:`oracle_core.plugins.cache`) keeps its validated manifest, its tools' names,
descriptions, options and schemas. Such a plugin enters the registry as a
:class:`~oracle_core.plugins.registry.Plugin` whose tools are :class:`DeferredTool`\\ s, and
is imported the first time one of its tools **validates arguments or is called**.

Which plugins may be deferred (:func:`deferral_record` decides when the plugin passes its
checks, and the cache keeps the answer with the plugin's entry):

- it is installed (a distribution) and implements no hook but ``oracle_manifest`` and
  ``oracle_tools``: middleware, routes, startup and shutdown, MCP servers, prompts and
  resources all need the imported plugin, so such a plugin is imported at start as before;
- it is ``on-demand`` and so are all its tools: an ``always`` or ``silent`` tool is shown on
  every model call, so its plugin is imported at start, where a failure is seen at once;
- its manifest declares no config model (a class needs the import) and no tool has an
  approval predicate (a function), and every tool is a plain :class:`Tool`.

A deferred entry is trusted only when, besides what the cache always checks (the versions
of oracle-core, pydantic and Python), these are unchanged: the distribution's version and
entry point, the stamps (size, modification time) of its ``RECORD``, of the files defining
the plugin object, its tool functions and their hints' classes, and of every module its
import loaded for the first time; and a digest of its configuration as the oracle would
pass it (its ``[plugins.<name>]`` table with ``$env`` resolved and the
``ORACLE_PLUGIN_<NAME>__*`` overrides applied). Anything else is imported as before.
What a cache cannot see is a plugin whose hooks answer differently for another reason
(the clock, a file outside its modules, a variable it reads itself): such a plugin must
not rely on its hooks being called at every start.

The first use goes through the loader's own path (import under the core's patch guard,
hook checks, hooks on a worker thread under the timeout, validation), with a plugin manager
of its own so the oracle's manager is never changed while it runs. A failure is logged as
a start-up failure is (plugin, distribution, file and line), the plugin is marked failed,
and this call and every later call of its tools get an error result naming the plugin;
the other plugins are not touched. The import runs on the thread that validates the call
(the event loop's, for most calls): a first call pays the plugin's import once.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol

from oracle_core.authoring.manifest import ManifestWarning, PluginManifest
from oracle_core.authoring.tools.schema import Arguments
from oracle_core.authoring.tools.tool import Tool
from oracle_core.errors import PluginError, PluginLoadError, ToolArgumentsError
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.registry import Plugin

__all__ = [
    "DEFERRABLE_HOOKS",
    "DeferredImport",
    "DeferredTool",
    "PluginUnavailableError",
    "Schemas",
    "config_digest",
    "deferral_record",
    "deferred_plugin",
    "first_use_failures",
]

log = logging.getLogger("oracle_core.plugins")

DEFERRABLE_HOOKS = frozenset({"oracle_manifest", "oracle_tools"})
"""The hooks a plugin may implement and still be imported only on first use."""

Importer = Callable[[PluginSource], "Plugin | PluginError"]
"""Imports and assembles one plugin as start-up would: its Plugin, or why it failed."""


class PluginUnavailableError(ToolArgumentsError):
    """A deferred plugin could not be imported when its tool was first needed.

    A :class:`~oracle_core.ToolArgumentsError` so that every path of the tool executor
    that validates or binds a call turns it into the call's error result.
    """


def config_digest(config: Any) -> str:
    """A digest of a plugin's plain configuration (secrets are never written, only this)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def deferral_record(
    plugin: Plugin, hooks: Collection[str], config: str, warnings: Sequence[ManifestWarning]
) -> dict[str, Any] | None:
    """What a later start needs to assemble ``plugin`` without importing it, or ``None``.

    Args:
        plugin: the plugin as start-up assembled it (imported, checked).
        hooks: the hooks it implements.
        config: :func:`config_digest` of the configuration its hooks got.
        warnings: the soft limits its manifest and tools exceed.

    Returns:
        ``None`` when it may not be deferred (see the module's rules); else a JSON-ready
        record: name, manifest, tools' options, manifest warnings, hooks and config digest.
    """
    manifest = plugin.manifest
    if (
        not set(hooks) <= DEFERRABLE_HOOKS
        or plugin.source.distribution is None
        or manifest.visibility != "on-demand"
        or manifest.config is not None
        or not isinstance(plugin.config, dict)
        or plugin.middleware
        or plugin.routes
    ):
        return None
    tools: list[dict[str, Any]] = []
    for tool in plugin.tools:
        options = _options(tool)
        if options is None or tool.visibility not in (None, "on-demand"):
            return None
        tools.append(
            {
                "name": tool.name,
                "description": tool.description,
                "options": options,
                "async": tool.is_async,
                "context": tool.context_parameter,
            }
        )
    return {
        "name": manifest.name,
        "manifest": manifest.model_dump_json(),
        "tools": tools,
        "warnings": [[w.field, w.message] for w in warnings],
        "hooks": sorted(hooks),
        "config": config,
    }


_OWN_FIELDS = frozenset({"name", "description", "function", "_arguments"})


@functools.cache
def _option_names() -> tuple[str, ...]:
    """The fields of :class:`Tool` a deferral record keeps (read once: they never change)."""
    return tuple(f.name for f in dataclasses.fields(Tool) if f.name not in _OWN_FIELDS)


def _options(tool: Tool) -> dict[str, Any] | None:
    """The tool's options (every field but name, description, function and schema), when
    each is plain data a JSON file keeps; ``None`` otherwise (e.g. an approval predicate).

    Read from the dataclass's fields, so an option added to :class:`Tool` is kept too.
    """
    if type(tool) is not Tool:
        return None
    options: dict[str, Any] = {}
    for name in _option_names():
        value = getattr(tool, name)
        if isinstance(value, tuple):
            if not all(isinstance(v, str) for v in value):
                return None
            value = list(value)
        elif value is not None and type(value) not in (bool, int, float, str):
            return None
        options[name] = value
    return options


class DeferredImport:
    """One deferred plugin's import, done once on first need (thread-safe).

    Args:
        source: where the plugin comes from.
        name: its manifest name.
        importer: imports and assembles it as start-up would.
        lock: held while any deferred plugin of the oracle is imported (imports and
            the start-up cache they read are shared by the whole process).
    """

    def __init__(
        self, source: PluginSource, name: str, importer: Importer, lock: threading.RLock
    ) -> None:
        self.source = source
        self.name = name
        self._importer = importer
        self._lock = lock
        self._tools: dict[str, Tool] | None = None
        self.failure: PluginError | None = None
        """Why the import failed (``None``: not tried yet, or it worked)."""

    @property
    def imported(self) -> bool:
        """Whether the plugin has been imported and assembled successfully."""
        return self._tools is not None

    def tool(self, name: str) -> Tool:
        """The plugin's real tool called ``name``, importing the plugin first if needed.

        Raises:
            PluginUnavailableError: the plugin failed to import or assemble (now or
                before), or no longer has the tool.
        """
        if self._tools is None and self.failure is None:
            with self._lock:
                if self._tools is None and self.failure is None:
                    self._import()
        if self.failure is not None:
            raise PluginUnavailableError(
                f"{name} did not run: its plugin {self.name!r} could not be imported "
                f"({self.failure}); the other plugins work"
            )
        assert self._tools is not None
        found = self._tools.get(name)
        if found is None:
            raise PluginUnavailableError(
                f"{name} did not run: plugin {self.name!r} no longer has this tool "
                "(it changed since the oracle started; restart it)"
            )
        return found

    def _import(self) -> None:
        outcome = self._importer(self.source)
        if isinstance(outcome, PluginError):
            self.failure = outcome
            self._report()
            return
        if outcome.name != self.name:
            self.failure = PluginLoadError(
                f"now calls itself {outcome.name!r} (it changed since the oracle started; "
                "restart it)",
                plugin=self.name,
                distribution=self.source.distribution,
            )
            self._report()
            return
        self._tools = {str(t.name): t for t in outcome.tools}

    def _report(self) -> None:
        """Log the failure as start-up reports one: plugin, distribution, what and where."""
        dist = f" [{self.source.distribution}]" if self.source.distribution else ""
        log.error("plugin %s%s failed at first use: %s", self.name, dist, self.failure)


class _FirstCall:
    """A deferred tool's ``function``: calls the real one, importing its plugin first."""

    __slots__ = ("_name", "_plugin")

    def __init__(self, plugin: DeferredImport, name: str) -> None:
        self._plugin = plugin
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._plugin.tool(self._name).function(*args, **kwargs)


class Schemas(Protocol):
    """Where a deferred plugin's cached tool schemas are read (the start-up cache)."""

    def get(self, index: int) -> Any:
        """The schema of the plugin's ``index``-th tool; raises ``ValueError`` when the
        cache cannot give it."""


class DeferredTool(Tool):
    """A tool of a plugin not imported yet: name, description, options and schema as cached.

    Showing it, listing it and searching it need nothing more. Validating arguments,
    binding or calling it imports the plugin (once) and hands over to the real tool; so
    does anything that needs its argument model or signature. Its JSON schema is read
    from the start-up cache when first shown (or, should the cache have changed since,
    taken from the real tool).
    """

    _deferred: DeferredImport
    _async: bool
    _context: str | None
    _schemas: Schemas
    _index: int
    _schema: dict[str, Any] | None

    def __init__(
        self, spec: Mapping[str, Any], plugin: DeferredImport, schemas: Schemas, index: int
    ) -> None:
        """A tool from its cached ``spec`` (see :func:`deferral_record`) and the cached
        schemas of its plugin's tools, of which it is the ``index``-th."""
        name = str(spec["name"])
        fields = vars(self)  # a frozen dataclass: filled in directly, as Tool.__init__ does
        fields["name"] = name
        fields["description"] = str(spec["description"])
        fields["function"] = _FirstCall(plugin, name)
        known = _option_names()
        for key, value in dict(spec["options"]).items():
            if key not in known:  # another version's record: the plugin is imported instead
                raise TypeError(f"tool {name!r}: unknown cached option {key!r}")
            fields[key] = tuple(value) if isinstance(value, list) else value
        fields["_deferred"] = plugin
        fields["_async"] = bool(spec.get("async"))
        context = spec.get("context")
        fields["_context"] = context if isinstance(context, str) else None
        fields["_schemas"] = schemas
        fields["_index"] = index
        fields["_schema"] = None

    @property
    def _arguments(self) -> Arguments:
        """The real tool's arguments (imports the plugin): its signature and model."""
        return self.real()._arguments

    def real(self) -> Tool:
        """The tool itself, its plugin imported (raises :class:`PluginUnavailableError`)."""
        return self._deferred.tool(self.name)

    @property
    def failure(self) -> PluginError | None:
        """Why its plugin could not be imported at first use (``None``: not tried, or it
        worked)."""
        return self._deferred.failure

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of its arguments, as cached (read once, when first shown).

        Should the cache no longer hold it (another start rewrote the file since), the
        real tool's; should its plugin then fail to import, a schema that takes no
        arguments: showing the tool must not break the request, and a call of it gets
        the error that names the plugin.
        """
        schema = self._schema
        if schema is None:
            try:
                cached = self._schemas.get(self._index)
            except ValueError:
                cached = None
            if isinstance(cached, dict):
                schema = cached
            else:
                try:
                    schema = self.real().parameters
                except PluginUnavailableError:
                    schema = {"type": "object", "properties": {}}
            vars(self)["_schema"] = schema
        return schema

    @property
    def context_parameter(self) -> str | None:
        """The parameter that receives the call's context (as cached)."""
        return self._context

    @property
    def is_async(self) -> bool:
        """Whether the real function is a coroutine function (as cached)."""
        return self._async

    @property
    def args_model(self) -> Any:
        """The real tool's argument model (imports the plugin)."""
        return self.real().args_model

    def prepare(self) -> None:
        """Prepare the real tool (imports the plugin)."""
        self.real().prepare()

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate ``arguments`` with the real tool (imports the plugin)."""
        return self.real().validate(arguments)

    def bind(self, arguments: Mapping[str, Any], context: Any = None) -> Any:
        """The real function with validated ``arguments`` applied (imports the plugin)."""
        return self.real().bind(arguments, context)


def first_use_failures(plugins: Iterable[Plugin]) -> list[PluginError]:
    """The failures of the deferred plugins among ``plugins`` whose import at first use
    failed so far (a long-running server lists them beside the failures at start)."""
    found: list[PluginError] = []
    for plugin in plugins:
        failure = next(
            (t.failure for t in plugin.tools if isinstance(t, DeferredTool) and t.failure),
            None,
        )
        if failure is not None:
            found.append(failure)
    return found


def deferred_plugin(
    record: Mapping[str, Any],
    source: PluginSource,
    config: dict[str, Any],
    schemas: Schemas,
    importer: DeferredImport,
) -> tuple[Plugin, list[ManifestWarning]]:
    """The registry's plugin for a cached ``record``, and its manifest's warnings.

    Args:
        record: what :func:`deferral_record` kept (its manifest validated already, or
            its JSON text).
        source: where the plugin comes from.
        config: its configuration (plain: a deferred plugin declares no config model).
        schemas: the cached schema of its ``index``-th tool, read on first need.
        importer: its import on first use.

    Raises:
        ValueError: the record does not have the expected shape (the plugin is then
            imported as before).
    """
    given = record["manifest"]  # checked by the cache (cache_records.check_record)
    manifest = (
        given if isinstance(given, PluginManifest) else PluginManifest.model_validate_json(given)
    )
    specs: Sequence[Mapping[str, Any]] = record["tools"]
    tools: list[Tool] = [
        DeferredTool(spec, importer, schemas, index) for index, spec in enumerate(specs)
    ]
    warnings = [ManifestWarning(manifest.name, str(f), str(m)) for f, m in record["warnings"]]
    return Plugin(manifest, source, tools, [], [], config, None), warnings
