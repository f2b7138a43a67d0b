"""The registry: every plugin the oracle assembled, with its tools, middleware and routes."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from oracle_core.authoring.manifest import ManifestWarning, PluginManifest, Visibility
from oracle_core.authoring.middleware import Middleware
from oracle_core.authoring.routes import Route
from oracle_core.authoring.tools.tool import Tool
from oracle_core.errors import PluginConflictError, PluginError
from oracle_core.plugins.core_tools import META_TOOL_NAMES
from oracle_core.plugins.discovery import PluginSource

if TYPE_CHECKING:
    from oracle_core.plugins.integrity import CoreSnapshot

__all__ = ["META_TOOL_NAMES", "BoundTool", "Plugin", "Registry"]


@dataclass(frozen=True, eq=False)
class Plugin:
    """A plugin the oracle assembled successfully.

    Attributes:
        manifest: the validated manifest (``version`` filled from the distribution).
        source: where it came from (entry point and distribution, or code).
        tools: its tools, in the order its ``oracle_tools`` returned them.
        middleware: its middleware, each with ``plugin`` set to this plugin's name.
        routes: its HTTP routes.
        config: its configuration from ``oracle.toml`` and the environment: an instance
            of the config model its manifest declares, else a dict.
        obj: the module or object that holds its hook implementations.
    """

    manifest: PluginManifest
    source: PluginSource
    tools: list[Tool] = field(default_factory=list)
    middleware: list[Middleware] = field(default_factory=list)
    routes: list[Route] = field(default_factory=list)
    config: Any = field(default_factory=dict)
    obj: Any = None

    @property
    def name(self) -> str:
        """The plugin's manifest name."""
        return self.manifest.name

    @property
    def visibility(self) -> Visibility:
        """The plugin's tier."""
        return self.manifest.visibility


@dataclass(frozen=True)
class BoundTool:
    """A tool together with the plugin that owns it, under the name the registry gave it.

    Attributes:
        tool: the tool.
        plugin: its plugin.
        name: the tool's name as it was when the registry was built (default: read from
            ``tool`` now). The gate, the executor and the wait checks decide on this string,
            never on ``tool.name``: a tool object is shared by every request that shows it,
            and renaming it in place must not change what a call of it may run.
    """

    tool: Tool
    plugin: Plugin
    name: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", str(self.tool.name))

    @property
    def visibility(self) -> Visibility:
        """The tool's own visibility if it overrides, else its plugin's tier."""
        return self.tool.visibility or self.plugin.visibility


@dataclass(frozen=True, eq=False)
class Registry:
    """Everything assembled from the plugins, plus what could not be. Immutable.

    The meta-tools' names are reserved (:data:`META_TOOL_NAMES`): a plugin tool called
    like one is refused with a :class:`~oracle_core.PluginConflictError`.

    Attributes:
        plugins: the assembled plugins by name, in registration order.
        failures: plugins left out, each with its name, distribution and reason.
        warnings: soft limits that assembled plugins exceed.
        core: the guarded core as it was before any plugin was imported
            (:class:`~oracle_core.plugins.integrity.CoreSnapshot`): startup hooks and tool
            calls are checked against it (``None``: a registry built in code, unchecked).
    """

    plugins: Mapping[str, Plugin] = field(default_factory=dict)
    failures: list[PluginError] = field(default_factory=list)
    warnings: list[ManifestWarning] = field(default_factory=list)
    core: CoreSnapshot | None = field(default=None, repr=False)
    standing_tools: tuple[BoundTool, ...] = field(init=False, repr=False)
    """Tools shown on every model call: effective visibility ``always`` or ``silent``."""
    on_demand_tools: Mapping[str, tuple[BoundTool, ...]] = field(init=False, repr=False)
    """Each plugin's tools that are shown only once the plugin is loaded in a thread."""
    _tools: Mapping[str, BoundTool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Private copies: nothing a caller does to what it passed in changes the registry.
        object.__setattr__(self, "plugins", MappingProxyType(dict(self.plugins)))
        object.__setattr__(self, "failures", list(self.failures))
        object.__setattr__(self, "warnings", list(self.warnings))
        tools: dict[str, BoundTool] = {}
        for plugin in self.plugins.values():
            for tool in plugin.tools:
                name = str(tool.name)  # read once: the registry's own string from here on
                tools[name] = BoundTool(tool, plugin, name)
        for name, bound in tools.items():
            # Validation refuses these names first; here no path around it can shadow one.
            if name.lower() in META_TOOL_NAMES:
                raise PluginConflictError(
                    f"tool {name!r} of plugin {bound.plugin.name!r} has the name of a core "
                    "meta-tool; rename it",
                    plugin=bound.plugin.name,
                )
        on_demand: dict[str, list[BoundTool]] = {}
        for bound in tools.values():
            if bound.visibility == "on-demand":
                on_demand.setdefault(bound.plugin.name, []).append(bound)
        # Tuples and read-only mappings: what the gate reads cannot be changed in place.
        object.__setattr__(self, "_tools", MappingProxyType(tools))
        object.__setattr__(
            self,
            "standing_tools",
            tuple(b for b in tools.values() if b.visibility in ("always", "silent")),
        )
        object.__setattr__(
            self, "on_demand_tools", MappingProxyType({k: tuple(v) for k, v in on_demand.items()})
        )

    def without(self, names: Collection[str], failures: Sequence[PluginError] = ()) -> Registry:
        """A copy without the plugins called ``names``, with ``failures`` appended.

        Their warnings go with them; the order of the others is kept.
        """
        gone = set(names)
        return Registry(
            plugins={n: p for n, p in self.plugins.items() if n not in gone},
            failures=[*self.failures, *failures],
            warnings=[w for w in self.warnings if w.plugin not in gone],
            core=self.core,
        )

    @property
    def tools(self) -> Mapping[str, BoundTool]:
        """Every bound tool by name, in plugin registration order."""
        return self._tools

    def __iter__(self) -> Iterator[Plugin]:
        return iter(self.plugins.values())

    def __len__(self) -> int:
        return len(self.plugins)

    def __contains__(self, name: object) -> bool:
        return name in self.plugins

    def get(self, name: str) -> Plugin | None:
        """The plugin called ``name``, or ``None``."""
        return self.plugins.get(name)

    def loadable(self, names: Sequence[object]) -> tuple[str, ...]:
        """Those of ``names`` a thread may load: on-demand plugins of this registry, each once.

        Anything else (unknown, silent or always plugins, non-strings) is left out, whoever
        named it: a thread's loads only ever hold plugins ``load_capability`` could load.
        """
        plugins = self.plugins
        return tuple(
            dict.fromkeys(
                n
                for n in names
                if type(n) is str and n in plugins and plugins[n].visibility == "on-demand"
            )
        )

    def listed(self) -> list[Plugin]:
        """The plugins the model may discover: every non-silent one, in registration order."""
        return [p for p in self.plugins.values() if p.visibility != "silent"]

    def middleware(self) -> list[Middleware]:
        """Every plugin's middleware, in plugin registration order."""
        return [m for p in self.plugins.values() for m in p.middleware]
