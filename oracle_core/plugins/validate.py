"""The plugin validator: every problem of one plugin, found at once.

Assembly (:mod:`oracle_core.plugins.loader`), ``oracle plugins`` and the harness's
``check_plugin`` all go through it, so a plugin that passes ``check_plugin`` loads, and one
that fails to load fails ``check_plugin`` with the same messages. Each problem is a
sentence naming the hook, manifest field or tool at fault and how to fix it.

Two kinds of problem:

- **errors** leave the plugin out: its hooks cannot be honoured, a hook raised, hung or
  returned the wrong type, the manifest is missing or invalid, a tool name is reserved or
  repeated, a tool definition would make the provider refuse every request that shows it,
  a tool is on-demand inside an always or silent plugin (loading could never show it),
  or an example names a tool that does not exist or has arguments that do not fit it;
- **warnings** are soft limits (long manifest texts, too many lines): the plugin loads,
  and ``check_plugin`` still fails.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pluggy
from pydantic import ValidationError

from oracle_core.errors import (
    ManifestError,
    PluginConfigError,
    PluginConflictError,
    PluginError,
    PluginLoadError,
    ToolArgumentsError,
    ToolDefinitionError,
)
from oracle_core.manifest import (
    ManifestWarning,
    PluginManifest,
    describe_validation_error,
    manifest_warnings,
)
from oracle_core.plugins.findability import findability_warnings
from oracle_core.plugins.function_schema import function_schema_problems, parameters_problems
from oracle_core.plugins.hooks import ASSEMBLY_HOOKS, HOOK_NAMES, LIFECYCLE_HOOKS, parse_hookimpl
from oracle_core.plugins.registry import META_TOOL_NAMES
from oracle_core.plugins.worker import HookTimeout
from oracle_core.routes import Route
from oracle_core.run.middleware import Middleware
from oracle_core.tools import Tool, simple_parameters

Trusted = Callable[[PluginManifest, Sequence[Tool]], bool]
"""Whether a plugin's tools and examples were found sound before (the start-up cache)."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a plugin.

    Attributes:
        message: the sentence shown to the operator and the plugin author.
        error: the kind of failure it makes when it is an error.
        field: the manifest field at fault, for manifest problems.
        hook: the hook whose implementation is at fault (it is then not called).
    """

    message: str
    error: type[PluginError] = PluginLoadError
    field: str | None = None
    hook: str | None = None


@dataclass
class HookResults:
    """What one plugin's assembly hooks gave, as the loader collected it.

    Attributes:
        results: each called hook's results (one per implementation that returned
            something other than ``None``).
        raised: the exception each hook raised instead.
        timed_out: the hook that did not return in time (later hooks were not called).
        config: the plugin's configuration as its hooks got it (its config model's
            instance, or a dict), read right after ``oracle_manifest``.
        config_error: why its configuration could not be read (later hooks were then
            not called).
    """

    results: dict[str, list[Any]] = field(default_factory=dict)
    raised: dict[str, BaseException] = field(default_factory=dict)
    timed_out: HookTimeout | None = None
    config: Any = None
    config_error: PluginConfigError | None = None


@dataclass(frozen=True)
class Validation:
    """Everything the validator found for one plugin.

    Attributes:
        name: the manifest's name when the manifest is valid, else the source's name.
        manifest: the valid manifest (``version`` filled in), or ``None``.
        tools: the tools its ``oracle_tools`` returned.
        middleware: the middleware its ``oracle_middleware`` returned.
        routes: the routes its ``oracle_routes`` returned.
        errors: problems that leave the plugin out.
        warnings: soft limits it exceeds (it still loads).
    """

    name: str
    manifest: PluginManifest | None
    tools: list[Tool]
    middleware: list[Middleware]
    routes: list[Route]
    errors: list[Problem]
    warnings: list[Problem]

    def failure(self, distribution: str | None = None) -> PluginError:
        """One error carrying every error problem (raise only when there are some)."""
        return plugin_error(self.errors, plugin=self.name, distribution=distribution)

    def manifest_warnings(self) -> list[ManifestWarning]:
        """The warnings as the registry keeps them (``message`` is the whole sentence)."""
        return [ManifestWarning(self.name, w.field or "tools", w.message) for w in self.warnings]


def plugin_error(
    problems: Sequence[Problem], *, plugin: str, distribution: str | None = None
) -> PluginError:
    """The error a plugin with ``problems`` fails with: all of them, listed in its message.

    Its type is the first problem's (so a plugin whose only problem is its manifest fails
    with a :class:`ManifestError` naming the field); ``problems`` holds every sentence.
    """
    first = problems[0]
    messages = [p.message for p in problems]
    text = messages[0] if len(messages) == 1 else _listing(messages)
    if first.error is ManifestError:
        return ManifestError(
            text, plugin=plugin, field=first.field, distribution=distribution, problems=messages
        )
    if first.error is PluginConfigError:
        return PluginConfigError(
            text, plugin=plugin, key=first.field, distribution=distribution, problems=messages
        )
    return first.error(text, plugin=plugin, distribution=distribution, problems=messages)


def _listing(messages: Sequence[str]) -> str:
    return f"has {len(messages)} problems:" + "".join(f"\n    - {m}" for m in messages)


# -- hook implementations, before registration -------------------------------------------------


def hook_problems(
    manager: pluggy.PluginManager, plugin: object, parsed: dict[str, Any] | None = None
) -> list[Problem]:
    """What the core cannot honour in ``plugin``'s hook implementations.

    Read from the plugin object with ``manager.parse_hookimpl_opts`` (what pluggy's own
    ``register`` uses), before the plugin is registered: unknown hooks (with the closest
    real one), parameters a hook does not pass, assembly hooks written ``async``, and
    wrappers that would wrap nothing. Each plugin's hooks are called on their own, so a
    ``wrapper=True`` implementation wraps its own plugin's implementations of the hook.
    A hook named by a problem's ``hook`` is not called.

    ``parsed``, if given, receives what ``parse_hookimpl_opts`` returned for each attribute
    read, so that registering the plugin need not parse them again.
    """
    found: list[Problem] = []
    impls: dict[str, list[tuple[str, Any, dict[str, Any]]]] = {}
    for attr in dir(plugin):
        dunder = attr.startswith("__") and attr.endswith("__")
        if dunder and parsed is None:
            continue  # Python's own names (a class object has dozens): never a hook
        opts = parse_hookimpl(manager, plugin, attr)
        if parsed is not None:
            parsed[attr] = opts
        if opts is None or dunder:
            continue
        options: dict[str, Any] = dict(opts)
        hook = options.get("specname") or attr
        if hook not in HOOK_NAMES:
            close = difflib.get_close_matches(hook, HOOK_NAMES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            via = f" (specname of {attr!r})" if options.get("specname") else ""
            found.append(
                Problem(
                    f"implements unknown hook {hook!r}{via}{hint}; "
                    f"the hooks are: {', '.join(HOOK_NAMES)}"
                )
            )
            continue
        impls.setdefault(hook, []).append((attr, getattr(plugin, attr), options))
    for hook, group in impls.items():
        spec = getattr(manager.hook, hook).spec
        offered = list(spec.argnames) if spec is not None else []
        own: list[Problem] = []
        for attr, function, options in group:
            own += _signature_problems(hook, attr, function, offered, options)
        own += _wrapper_problems(hook, group)
        found += [dataclasses.replace(p, hook=hook) for p in own]
    return found


def _signature_problems(
    hook: str, attr: str, function: Any, offered: list[str], options: dict[str, Any]
) -> list[Problem]:
    where = f"hook {hook} ({attr!r})" if attr != hook else f"hook {hook}"
    found: list[Problem] = []
    parameters = _named_parameters(function)
    if parameters is None:
        return [Problem(f"{where} is not a function: decorate a plain function with @hookimpl")]
    for name, has_default in parameters:
        if name not in offered:
            passes = ", ".join(offered) or "nothing"
            found.append(
                Problem(
                    f"{where} asks for {name!r}, which {hook} does not pass (it "
                    f"passes: {passes}): rename or remove the parameter"
                )
            )
        elif has_default:
            found.append(
                Problem(
                    f"{where} gives {name!r} a default, so pluggy never passes it: "
                    "remove the default"
                )
            )
    wraps = options.get("wrapper") or options.get("hookwrapper")
    if hook in ASSEMBLY_HOOKS and not wraps and inspect.iscoroutinefunction(function):
        found.append(
            Problem(
                f"{where} is async, but assembly hooks are called synchronously: make it a "
                "plain def (open connections in oracle_startup, which may be async)"
            )
        )
    return found


def _named_parameters(function: Any) -> list[tuple[str, bool]] | None:
    """Each named parameter of ``function`` (not ``*args``/``**kwargs``), and whether it has
    a default; ``None`` when it has no signature.

    A plain function's are read off its code object, as ``inspect.signature`` reads them
    (which costs tens of microseconds a call, two hooks a plugin, thousands of plugins);
    anything else (bound methods, wrapped or decorated callables) goes through
    ``inspect.signature``.
    """
    if (
        type(function) is types.FunctionType
        and not hasattr(function, "__wrapped__")
        and not hasattr(function, "__signature__")
    ):
        code = function.__code__
        positional = code.co_varnames[: code.co_argcount]
        keyword = code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
        defaults = len(function.__defaults__ or ())
        given = function.__kwdefaults__ or {}
        first_default = len(positional) - defaults
        return [(n, i >= first_default) for i, n in enumerate(positional)] + [
            (n, n in given) for n in keyword
        ]
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    return [
        (p.name, p.default is not p.empty)
        for p in parameters
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def _wrapper_problems(hook: str, group: list[tuple[str, Any, dict[str, Any]]]) -> list[Problem]:
    found: list[Problem] = []
    plain = [function for _, function, options in group if not _wraps(options)]
    for attr, function, options in group:
        if not _wraps(options):
            continue
        where = f"hook {hook} ({attr!r})" if attr != hook else f"hook {hook}"
        if options.get("wrapper") and options.get("hookwrapper"):
            found.append(
                Problem(f"{where} sets both wrapper=True and hookwrapper=True: keep wrapper=True")
            )
        if not inspect.isgeneratorfunction(function):
            found.append(
                Problem(
                    f"{where} is a wrapper but not a generator function: `yield` once to let "
                    "the plugin's own implementation run, or drop wrapper=True"
                )
            )
        if not plain:
            found.append(
                Problem(
                    f"{where} is a wrapper with nothing to wrap: the core calls each plugin's "
                    "hooks on their own, so a wrapper wraps only its own plugin's "
                    f"implementations of {hook}; add a plain @hookimpl {hook}, or drop "
                    "wrapper=True"
                )
            )
        elif hook in LIFECYCLE_HOOKS and any(inspect.iscoroutinefunction(f) for f in plain):
            found.append(
                Problem(
                    f"{where} wraps an async implementation, which the core awaits only "
                    "after the wrapper has finished: make the wrapped implementation a plain "
                    "def, or drop the wrapper"
                )
            )
    return found


def _wraps(options: dict[str, Any]) -> bool:
    return bool(options.get("wrapper") or options.get("hookwrapper"))


# -- what the assembly hooks returned -----------------------------------------------------------


def validate(
    name: str,
    results: HookResults,
    *,
    version: str | None = None,
    registration: Sequence[Problem] = (),
    trusted: Trusted | None = None,
) -> Validation:
    """Check everything one plugin's assembly hooks gave, and return every problem.

    Args:
        name: the plugin's source name (used until its manifest is known to be valid).
        results: what its hooks returned or raised.
        version: its distribution's version, the manifest's default ``version``.
        registration: problems :func:`hook_problems` found before it was registered.
        trusted: says whether this manifest and these tools were found sound before (same
            distribution files, same signatures); their tool and example checks, which
            build every tool's schema, are then skipped.
    """
    errors = list(registration)
    if results.config_error is not None:
        # Its settings come first: they are why no hook after the manifest was called.
        key = results.config_error.key
        errors += [Problem(p, PluginConfigError, key) for p in results.config_error.problems]
    manifest = _manifest(results, errors)
    if manifest is not None and manifest.version is None and version is not None:
        manifest = manifest.model_copy(update={"version": version})
    tools = _listed(results, "oracle_tools", Tool, errors)
    middleware = _listed(results, "oracle_middleware", Middleware, errors)
    routes = _listed(results, "oracle_routes", Route, errors)
    if results.timed_out is not None:
        hook = results.timed_out.hook
        errors.append(
            Problem(
                f"{results.timed_out}: it is left out (raise ORACLE_HOOK_TIMEOUT if it needs "
                f"longer, or do the slow part lazily, e.g. in oracle_startup or the first "
                f"tool call){_not_called(hook)}"
            )
        )
    warnings: list[Problem] = []
    plugin = manifest.name if manifest is not None else name
    visibility = manifest.visibility if manifest is not None else "on-demand"
    known = manifest is not None and trusted is not None and trusted(manifest, tools)
    if results.config_error is not None:
        known = True  # its tools were never asked for: nothing to check them against
    if not known:
        tool_errors, tool_warnings = tool_problems(plugin, visibility, tools)
        errors += tool_errors
        warnings += tool_warnings
    if manifest is not None:
        if not known:
            errors += example_problems(manifest, tools)
        errors += connection_problems(manifest, tools)  # cheap: only tools that list some
        warnings = [
            Problem(f"manifest field {w.field!r} {w.message}", field=w.field)
            for w in [*manifest_warnings(manifest), *findability_warnings(manifest, tools)]
        ] + warnings
    return Validation(
        name=plugin,
        manifest=manifest,
        tools=tools,
        middleware=middleware,
        routes=routes,
        errors=errors,
        warnings=warnings,
    )


def _not_called(hook: str) -> str:
    later = ASSEMBLY_HOOKS[ASSEMBLY_HOOKS.index(hook) + 1 :] if hook in ASSEMBLY_HOOKS else ()
    return f"; {', '.join(later)} were not called" if later else ""


def _manifest(results: HookResults, errors: list[Problem]) -> PluginManifest | None:
    error = results.raised.get("oracle_manifest")
    if isinstance(error, ValidationError):
        errors += _field_problems(error)
        return None
    if error is not None:
        errors.append(Problem(f"hook oracle_manifest raised {type(error).__name__}: {error}"))
        return None
    returned = results.results.get("oracle_manifest")
    if returned is None:
        return None  # not reached: the hook timed out, or registration failed
    if not returned:
        errors.append(
            Problem(
                "has no manifest: implement `@hookimpl def oracle_manifest() -> PluginManifest`",
                ManifestError,
            )
        )
        return None
    if len(returned) > 1:
        errors.append(
            Problem(
                f"has {len(returned)} oracle_manifest implementations: keep exactly one",
                ManifestError,
            )
        )
        return None
    raw = returned[0]
    if isinstance(raw, PluginManifest):
        config = raw.config  # excluded from dumps: it is a class, not data
        raw = raw.model_dump(exclude_unset=True)
        if config is not None:
            raw["config"] = config
    if not isinstance(raw, dict):
        errors.append(
            Problem(
                f"oracle_manifest returned {type(returned[0]).__name__}: return a PluginManifest",
                ManifestError,
            )
        )
        return None
    try:
        return PluginManifest.model_validate(raw)
    except ValidationError as invalid:
        errors += _field_problems(invalid)
        return None


def _field_problems(error: ValidationError) -> list[Problem]:
    # A Connection(...) built inside oracle_manifest fails on its own: name its field in full.
    prefix = "connections." if error.title == "Connection" else ""
    return [
        Problem(f"manifest field {prefix + name!r} {message}", ManifestError, prefix + name)
        for name, message in describe_validation_error(error)
    ]


def _listed(results: HookResults, hook: str, kind: type, errors: list[Problem]) -> list[Any]:
    error = results.raised.get(hook)
    if error is not None:
        errors.append(Problem(f"hook {hook} raised {type(error).__name__}: {error}"))
        return []
    items: list[Any] = []
    for result in results.results.get(hook, []):
        if not isinstance(result, list | tuple):
            errors.append(
                Problem(
                    f"hook {hook} returned {type(result).__name__}: return a list of "
                    f"{kind.__name__}"
                )
            )
            continue
        for item in result:
            if isinstance(item, kind):
                items.append(item)
                continue
            hint = " (decorate the function with @tool)" if kind is Tool and callable(item) else ""
            errors.append(
                Problem(
                    f"hook {hook} returned a {type(item).__name__} where a {kind.__name__} "
                    f"belongs{hint}"
                )
            )
    return items


# -- tools and examples ---------------------------------------------------------------------------


def tool_problems(
    plugin: str, visibility: str, tools: Sequence[Tool]
) -> tuple[list[Problem], list[Problem]]:
    """Errors and warnings of a plugin's tools: names, OpenAI definitions, reachability.

    The JSON Schema meta-schema check is left to :func:`deep_tool_problems` (it costs
    milliseconds a tool, too much for every tool of a large catalog at every start).
    """
    errors: list[Problem] = []
    warnings: list[Problem] = []
    seen: set[str] = set()
    for tool in tools:
        where = f"tool {tool.name!r}"
        if tool.name.lower() in META_TOOL_NAMES:  # a case variant would read as the meta-tool
            errors.append(
                Problem(
                    f"{where} has the name of a core meta-tool; rename it "
                    f"(@tool(name='{plugin.replace('-', '_')}_{tool.name}'))",
                    PluginConflictError,
                )
            )
        if tool.name in seen:
            errors.append(
                Problem(f"registers tool {tool.name!r} twice; rename one", PluginConflictError)
            )
            continue
        seen.add(tool.name)
        try:
            tool.prepare()  # @tool builds schemas lazily: a type pydantic cannot describe shows here
        except ToolDefinitionError as error:
            errors.append(Problem(str(error)))
            continue
        errors += [
            Problem(f"{where}: {p}")
            for p in function_schema_problems(tool.openai_schema(), meta_schema=False)
        ]
        if not simple_parameters(tool):  # simple types always validate: no model to build
            try:
                tool.validate({})
            except ToolArgumentsError:
                pass  # it has required arguments: that is what validation is for
            except Exception as error:
                errors.append(
                    Problem(
                        f"{where} cannot validate its arguments ({type(error).__name__}: "
                        f"{error}); make it with @tool"
                    )
                )
        if tool.visibility == "on-demand" and visibility != "on-demand":
            article = "an" if visibility[0] in "aeiou" else "a"
            errors.append(
                Problem(
                    f"{where} is on-demand in {article} {visibility} plugin: loading {plugin!r} "
                    "cannot show it, so the model can never call it; give it "
                    f"visibility={visibility!r} or move it to an on-demand plugin"
                )
            )
    return errors, warnings


def deep_tool_problems(tools: Sequence[Tool]) -> list[Problem]:
    """Tool parameters that are not valid JSON Schema (the slow check ``check_plugin`` adds)."""
    found: list[Problem] = []
    for tool in tools:
        shallow = set(parameters_problems(tool.parameters, meta_schema=False))
        found += [
            Problem(f"tool {tool.name!r}: {p}")
            for p in parameters_problems(tool.parameters)
            if p not in shallow
        ]
    return found


def connection_problems(manifest: PluginManifest, tools: Sequence[Tool]) -> list[Problem]:
    """Each connection a tool lists must be declared by its plugin, and the tool must take
    a :class:`~oracle_core.ToolContext` to read it."""
    declared = [c.name for c in manifest.connections]
    found: list[Problem] = []
    for tool in tools:
        if not tool.connections:
            continue
        where = f"tool {tool.name!r}"
        for name in tool.connections:
            if name not in declared:
                close = difflib.get_close_matches(name, declared, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                found.append(
                    Problem(
                        f"{where} lists connection {name!r}, which plugin {manifest.name!r} does "
                        f"not declare{hint} (it declares: {', '.join(declared) or 'none'}); add "
                        f"Connection(name={name!r}, ...) to its manifest's connections, or "
                        "remove it from @tool(connections=[...])",
                        ManifestError,
                        "connections",
                    )
                )
        try:
            takes_context = tool.context_parameter is not None
        except ToolDefinitionError:
            continue  # reported with the tool
        if not takes_context:
            found.append(
                Problem(
                    f"{where} lists connections but takes no ToolContext parameter, so it "
                    "cannot read them: add a parameter `ctx: ToolContext` and call "
                    "ctx.credential(name)"
                )
            )
    return found


def example_problems(manifest: PluginManifest, tools: Sequence[Tool]) -> list[Problem]:
    """Each example must name a tool of the plugin, with arguments valid for its schema."""
    by_name = {t.name: t for t in tools}
    found: list[Problem] = []
    for index, example in enumerate(manifest.examples):
        at = f"examples[{index}]"
        target = by_name.get(example.tool)
        if target is None:
            known = ", ".join(by_name) or "none"
            found.append(
                Problem(
                    f"manifest field '{at}.tool' names {example.tool!r}, which is not a tool of "
                    f"this plugin (its tools: {known}); name one of them",
                    ManifestError,
                    f"{at}.tool",
                )
            )
            continue
        try:
            target.validate(example.args)
        except ToolArgumentsError as error:
            found.append(
                Problem(
                    f"manifest field '{at}.args' does not fit {example.tool!r}: {error}; "
                    "make the example's args match the tool's parameters",
                    ManifestError,
                    f"{at}.args",
                )
            )
        except Exception:
            pass  # the tool cannot validate anything: reported with the tool
    return found
