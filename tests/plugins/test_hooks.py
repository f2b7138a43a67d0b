"""Hooks are called through pluggy, plugin by plugin; what the core cannot honour is refused."""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from support import SitePackages, plugin_code

from oracle_core import PluginLoadError, PluginManifest, Tool, hookimpl, tool
from oracle_core.authoring.host import PluginHost, PluginStates
from oracle_core.plugins.loader import Candidate, assemble, new_plugin_manager, source_for_object
from oracle_core.plugins.registry import Registry
from oracle_core.settings import Settings


@tool
def ping(text: str) -> str:
    """Echo the text back."""
    return text


@tool
def pong(text: str) -> str:
    """Echo the text back, differently."""
    return text


class Plain:
    """A sound plugin object with one tool."""

    def __init__(self, name: str = "plain", tools: tuple[Tool, ...] = (ping,)) -> None:
        self.name, self.tools = name, list(tools)

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(name=self.name, summary="A plugin.", when_to_use=["always"])

    @hookimpl
    def oracle_tools(self) -> list[Tool]:
        return self.tools


def assembled(tmp_path: Path, *plugins: object, timeout: float = 5.0, **env: str) -> Registry:
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path), **env})
    return assemble(
        [Candidate(source_for_object(p), p) for p in plugins],
        manager=new_plugin_manager(),
        host=PluginHost(settings, PluginStates()),
        timeout=timeout,
    )


def only_failure(registry: Registry) -> str:
    [failure] = registry.failures
    return str(failure)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown, so a hung hook's abandoned thread can end."""
    event = threading.Event()
    yield event
    event.set()


def test_a_hook_gets_only_the_arguments_it_asks_for(tmp_path: Path) -> None:
    class Picky(Plain):
        @hookimpl
        def oracle_tools(self, oracle: PluginHost) -> list[Tool]:
            assert oracle.settings.home == tmp_path
            return self.tools

    registry = assembled(tmp_path, Picky())

    assert list(registry.tools) == ["ping"]


def test_each_plugin_gets_only_its_own_results(tmp_path: Path) -> None:
    registry = assembled(tmp_path, Plain("one", (ping,)), Plain("two", (pong,)))

    assert [t.name for t in registry.plugins["one"].tools] == ["ping"]
    assert [t.name for t in registry.plugins["two"].tools] == ["pong"]


def test_a_wrapper_wraps_its_own_plugins_implementation(tmp_path: Path) -> None:
    class Wrapped(Plain):
        @hookimpl(wrapper=True)
        def oracle_tools(self) -> Generator[None, list[list[Tool]], list[list[Tool]]]:
            results = yield
            return [[*tools, pong] for tools in results]

        @hookimpl(specname="oracle_tools")
        def base_tools(self) -> list[Tool]:
            return [ping]

    registry = assembled(tmp_path, Wrapped(), Plain("other", ()))

    assert [t.name for t in registry.plugins["plain"].tools] == ["ping", "pong"]
    assert registry.plugins["other"].tools == []


def test_a_wrapper_with_nothing_of_its_own_to_wrap_is_refused(tmp_path: Path) -> None:
    class Lonely:
        @hookimpl
        def oracle_manifest(self) -> PluginManifest:
            return PluginManifest(name="lonely", summary="A plugin.", when_to_use=["always"])

        @hookimpl(wrapper=True)
        def oracle_tools(self) -> Generator[None, list[Any], list[Any]]:
            return (yield)

    message = only_failure(assembled(tmp_path, Lonely(), Plain()))

    assert "hook oracle_tools is a wrapper with nothing to wrap" in message
    assert "a wrapper wraps only its own plugin's implementations" in message
    assert "add a plain @hookimpl oracle_tools, or drop wrapper=True" in message


def test_a_wrapper_that_is_not_a_generator_is_refused(tmp_path: Path) -> None:
    class NotAGenerator(Plain):
        @hookimpl(wrapper=True, specname="oracle_tools")
        def wrap_tools(self) -> list[Tool]:
            return []

    message = only_failure(assembled(tmp_path, NotAGenerator()))

    assert "hook oracle_tools ('wrap_tools') is a wrapper but not a generator function" in message


def test_a_parameter_the_hook_does_not_pass_is_refused_naming_what_it_passes(
    tmp_path: Path,
) -> None:
    class Misnamed(Plain):
        @hookimpl
        def oracle_tools(self, cfg: dict[str, Any]) -> list[Tool]:
            return []

    message = only_failure(assembled(tmp_path, Misnamed()))

    assert message == (
        "hook oracle_tools asks for 'cfg', which oracle_tools does not pass (it passes: "
        "config, oracle): rename or remove the parameter"
    )


def test_a_parameter_with_a_default_is_refused_since_pluggy_never_passes_it(
    tmp_path: Path,
) -> None:
    class Defaulted(Plain):
        @hookimpl
        def oracle_tools(self, config: Any = None) -> list[Tool]:
            return []

    message = only_failure(assembled(tmp_path, Defaulted()))

    assert "gives 'config' a default, so pluggy never passes it: remove the default" in message


def test_an_async_assembly_hook_is_refused(tmp_path: Path) -> None:
    class Async(Plain):
        @hookimpl
        async def oracle_tools(self) -> list[Tool]:  # type: ignore[override]
            return []

    message = only_failure(assembled(tmp_path, Async()))

    assert "hook oracle_tools is async, but assembly hooks are called synchronously" in message


def test_a_specname_naming_no_hook_is_refused_with_a_suggestion(tmp_path: Path) -> None:
    class Typo(Plain):
        @hookimpl(specname="oracle_route")
        def my_routes(self) -> list[Any]:
            return []

    message = only_failure(assembled(tmp_path, Typo()))

    assert "unknown hook 'oracle_route' (specname of 'my_routes')" in message
    assert "did you mean 'oracle_routes'?" in message


def test_a_hook_that_hangs_at_assembly_is_reported_and_the_rest_assembles(
    tmp_path: Path, release: threading.Event
) -> None:
    class Hangs(Plain):
        @hookimpl
        def oracle_tools(self) -> list[Tool]:
            release.wait()
            return []

    # A second: the timeout bounds every plugin's hooks, and "fine"'s must pass under load.
    registry = assembled(tmp_path, Hangs("stuck"), Plain("fine", (pong,)), timeout=1.0)

    assert list(registry.plugins) == ["fine"]
    [failure] = registry.failures
    assert isinstance(failure, PluginLoadError)
    assert failure.plugin == "stuck"
    assert str(failure).startswith("hook oracle_tools did not return within 1 s")


def test_trace_plugins_prints_every_assembly_hook_call(
    site: SitePackages, capfd: pytest.CaptureFixture[str]
) -> None:
    code = plugin_code("weather") + "\n@hookimpl\ndef oracle_middleware():\n    return []\n"
    # Its own module name: the real weather plugin may be imported by an earlier test.
    site.add("oracle-plugin-traced", code, module="traced_weather", entry_point="weather")

    site.oracle(ORACLE_TRACE_PLUGINS="1")

    assert capfd.readouterr().err.splitlines() == [
        "oracle: hook oracle_manifest -> weather",
        "oracle: hook oracle_tools -> weather",
        "oracle: hook oracle_middleware -> weather",
    ]


def test_a_hook_that_raises_is_traced_with_its_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    class Broken(Plain):
        @hookimpl
        def oracle_tools(self) -> list[Tool]:
            raise RuntimeError("boom")

    assembled(tmp_path, Broken("broken"), ORACLE_TRACE_PLUGINS="1")

    assert (
        "oracle: hook oracle_tools -> broken raised RuntimeError: boom" in capsys.readouterr().err
    )


def test_bulk_registration_orders_implementations_as_pluggy_does() -> None:
    from oracle_core.plugins.hooks import register_plugins

    def plugin(label: str, **options: bool) -> object:
        class Impl:
            if options.get("wrapper"):

                @hookimpl(wrapper=True)
                def oracle_tools(self) -> Generator[None, list[Tool], list[Tool]]:
                    return (yield)

            else:

                @hookimpl(**options)
                def oracle_tools(self) -> list[Tool]:
                    return []

        Impl.__name__ = label
        return Impl()

    kinds: list[dict[str, bool]] = [{}, {"tryfirst": True}, {}, {"trylast": True}, {"wrapper": True},
                                    {}, {"trylast": True}, {"tryfirst": True}, {}]  # fmt: skip
    early = [plugin(f"early{i}", **k) for i, k in enumerate(kinds)]
    late = [plugin(f"late{i}", **k) for i, k in enumerate(kinds)]
    one_by_one, bulk = new_plugin_manager(), new_plugin_manager()
    for index, obj in enumerate([*early, *late]):
        one_by_one.register(obj, name=f"p{index}")
    for index, obj in enumerate(early):  # some registered the usual way first
        bulk.register(obj, name=f"p{index}")
    outcome = register_plugins(bulk, [(obj, f"p{len(early) + i}") for i, obj in enumerate(late)])

    assert outcome == [None] * len(late)
    order = [i.plugin_name for i in one_by_one.hook.oracle_tools.get_hookimpls()]
    assert [i.plugin_name for i in bulk.hook.oracle_tools.get_hookimpls()] == order
    assert bulk.list_name_plugin() == one_by_one.list_name_plugin()


def test_bulk_registration_refuses_a_plugin_registered_twice() -> None:
    from oracle_core.plugins.hooks import register_plugins

    manager = new_plugin_manager()
    obj = Plain()

    first, again = register_plugins(manager, [(obj, "one"), (obj, "two")])

    assert first is None
    assert isinstance(again, ValueError)
    assert manager.get_plugins() == {obj}


def test_the_fast_hook_parse_answers_exactly_as_pluggy_for_every_kind_of_attribute() -> None:
    """Seeded: modules holding every kind of attribute, read by both, must agree."""
    import functools
    import random
    import types

    from oracle_core import hookimpl
    from oracle_core.plugins.hooks import new_plugin_manager, parse_hookimpl

    class Callable_:
        def __call__(self) -> None: ...

        def method(self) -> None: ...

    def marked() -> None: ...

    def plain() -> None: ...

    def odd_marker() -> None: ...

    odd_marker.oracle_impl = "not a dict"  # type: ignore[attr-defined]
    kinds: list[object] = [
        hookimpl(marked),
        hookimpl(specname="oracle_tools")(lambda: []),
        hookimpl(tryfirst=True)(plain),
        plain,
        odd_marker,
        staticmethod(hookimpl(lambda: None)),
        classmethod(hookimpl(lambda cls: None)),
        types.MethodType(hookimpl(lambda self: None), object()),
        Callable_().method,
        functools.partial(marked),
        len,
        Callable_,
        Callable_(),
        property(lambda self: None),
        "text",
        None,
        42,
        types,
        hookimpl,
    ]
    manager = new_plugin_manager()
    rng = random.Random(1234)
    for round_ in range(50):
        module = types.ModuleType(f"fuzzed_{round_}")
        for index in range(rng.randint(1, 12)):
            name = rng.choice(["oracle_manifest", "oracle_tools", f"attr{index}", f"_p{index}"])
            setattr(module, name, rng.choice(kinds))
        if rng.random() < 0.3:
            module.__doc__ = rng.choice(kinds)  # type: ignore[assignment]
        for name in dir(module):
            assert parse_hookimpl(manager, module, name) == manager.parse_hookimpl_opts(
                module, name
            ), (round_, name)


def test_hook_parameters_are_read_as_inspect_signature_reads_them() -> None:
    """Seeded: functions of every parameter shape, read fast and by inspect, must agree."""
    import inspect
    import random

    from oracle_core.plugins.validate.hooks import _named_parameters

    rng = random.Random(99)
    for round_ in range(200):
        names = [f"p{i}" for i in range(rng.randint(0, 6))]
        parts: list[str] = []
        kinds = sorted(rng.choice("pnkd") for _ in names)  # posonly, normal, kwonly, default
        posonly = [n for n, k in zip(names, kinds, strict=True) if k == "d"]
        normal = [n for n, k in zip(names, kinds, strict=True) if k in "n"]
        kwonly = [n for n, k in zip(names, kinds, strict=True) if k in "kp"]
        if posonly:
            parts += [*posonly, "/"]
        defaulted = rng.random() < 0.5
        parts += [
            f"{n}=1" if defaulted and i == len(normal) - 1 else n for i, n in enumerate(normal)
        ]
        if rng.random() < 0.3:
            parts.append("*args")
        elif kwonly:
            parts.append("*")
        parts += [f"{n}=2" if rng.random() < 0.5 else n for n in kwonly]
        if rng.random() < 0.3:
            parts.append("**kw")
        namespace: dict[str, object] = {}
        exec(f"def f({', '.join(parts)}): pass", namespace)
        function = namespace["f"]
        expected = [
            (p.name, p.default is not p.empty)
            for p in inspect.signature(function).parameters.values()  # type: ignore[arg-type]
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        assert _named_parameters(function) == expected, (round_, parts)
