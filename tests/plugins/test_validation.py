"""Every plugin is validated at assembly; each error names the plugin, the field and the fix."""

from __future__ import annotations

import pytest
from support import SitePackages, plugin_code

from oracle_core import (
    DependencyError,
    ManifestError,
    PluginConflictError,
    PluginError,
    PluginManifest,
    hookimpl,
    tool,
)


def only_failure(site: SitePackages) -> PluginError:
    registry = site.oracle().registry
    assert len(registry.failures) == 1, registry.failures
    return registry.failures[0]


def test_a_plugin_without_a_manifest_is_left_out(site: SitePackages) -> None:
    site.add("oracle-plugin-bare", "from oracle_core import hookimpl\n")

    failure = only_failure(site)

    assert isinstance(failure, ManifestError)
    assert failure.plugin == "oracle_plugin_bare"
    assert "has no manifest" in str(failure)
    assert "def oracle_manifest" in str(failure)


def test_two_manifests_in_one_plugin_are_refused(site: SitePackages) -> None:
    code = plugin_code("twice") + (
        "\n\n@hookimpl(specname='oracle_manifest')\n"
        "def second_manifest():\n    return oracle_manifest()\n"
    )
    site.add("oracle-plugin-twice", code)

    failure = only_failure(site)

    assert "2 oracle_manifest implementations: keep exactly one" in str(failure)


@pytest.mark.parametrize(
    ("manifest", "field", "words"),
    [
        (
            "name='Weather Tool', summary='s', when_to_use=['w']",
            "name",
            "use lowercase letters, digits, '-' and '_', starting with a letter (for example 'weather-tool')",
        ),
        ("name='w', summary='   ', when_to_use=['w']", "summary", "write one line"),
        ("name='w', summary='s'", "when_to_use", "add at least one line"),
        ("name='w', summary='s', when_to_use=['w'], tags=['Geo']", "tags", "write ['geo']"),
        ("name='w', when_to_use=['w']", "summary", "is required"),
        (
            "name='w', summary='s', when_to_use=['w'], colour='red'",
            "colour",
            "is not a manifest field",
        ),
        ("name='w', summary='s', when_to_use=['w'], visibility='hidden'", "visibility", "'always'"),
    ],
)
def test_bad_manifest_fields_are_named_with_their_fix(
    site: SitePackages, manifest: str, field: str, words: str
) -> None:
    site.add(
        "oracle-plugin-w",
        f"from oracle_core import hookimpl, PluginManifest\n"
        f"@hookimpl\ndef oracle_manifest():\n    return PluginManifest({manifest})\n",
    )

    failure = only_failure(site)

    assert isinstance(failure, ManifestError)
    assert failure.field == field
    assert failure.plugin == "oracle_plugin_w"
    assert f"manifest field {field!r}" in str(failure)
    assert words in str(failure)


def test_a_silent_plugin_needs_no_when_to_use(site: SitePackages) -> None:
    site.add(
        "oracle-plugin-quiet",
        "from oracle_core import hookimpl, PluginManifest\n"
        "@hookimpl\ndef oracle_manifest():\n"
        "    return PluginManifest(name='quiet', summary='Works unseen.', visibility='silent')\n",
    )

    assert list(site.oracle().registry.plugins) == ["quiet"]


def test_an_example_must_name_a_tool_of_the_plugin(site: SitePackages) -> None:
    extra = "examples=[Example(user='hi', tool='pong', args={'text': 'x'})],"
    code = plugin_code("ex", tools=("ping",), extra_manifest=extra).replace(
        "import hookimpl,", "import Example, hookimpl,"
    )
    site.add("oracle-plugin-ex", code)

    failure = only_failure(site)

    assert isinstance(failure, ManifestError)
    assert failure.plugin == "ex"
    assert failure.field == "examples[0].tool"
    assert "names 'pong', which is not a tool of this plugin (its tools: ping)" in str(failure)


def test_an_example_args_must_fit_the_tool_schema(site: SitePackages) -> None:
    extra = "examples=[Example(user='hi', tool='ping', args={'txt': 'x'})],"
    code = plugin_code("ex", tools=("ping",), extra_manifest=extra).replace(
        "import hookimpl,", "import Example, hookimpl,"
    )
    site.add("oracle-plugin-ex", code)

    failure = only_failure(site)

    assert failure.field == "examples[0].args"  # type: ignore[attr-defined]
    assert "text: Field required" in str(failure)
    assert "txt: Extra inputs are not permitted" in str(failure)


def test_two_plugins_with_one_name_keep_the_first_and_name_both(site: SitePackages) -> None:
    site.add("oracle-plugin-a", plugin_code("same", tools=("a_tool",)))
    site.add("oracle-plugin-b", plugin_code("same", tools=("b_tool",)))

    registry = site.oracle().registry

    assert registry.plugins["same"].source.distribution == "oracle-plugin-a"
    [failure] = registry.failures
    assert isinstance(failure, PluginConflictError)
    assert "'oracle-plugin-a'" in str(failure)
    assert "'oracle-plugin-b'" in str(failure)
    assert "ORACLE_DISABLE_PLUGINS" in str(failure)


def test_two_plugins_registering_one_tool_name_both_owners_are_named(site: SitePackages) -> None:
    site.add("oracle-plugin-a", plugin_code("first", tools=("lookup",)))
    site.add("oracle-plugin-b", plugin_code("second", tools=("lookup",)))

    registry = site.oracle().registry

    assert list(registry.plugins) == ["first"]
    [failure] = registry.failures
    assert isinstance(failure, PluginConflictError)
    assert failure.plugin == "second"
    assert "tool 'lookup' is registered by both 'first'" in str(failure)
    assert "and 'second'" in str(failure)
    assert "rename the tool" in str(failure)


def test_a_tool_may_not_take_a_meta_tool_name(site: SitePackages) -> None:
    site.add("oracle-plugin-sneaky", plugin_code("sneaky", tools=("load_capability",)))

    failure = only_failure(site)

    assert isinstance(failure, PluginConflictError)
    assert "'load_capability' has the name of a core meta-tool" in str(failure)


def test_depends_on_an_absent_plugin_leaves_it_and_its_dependents_out(site: SitePackages) -> None:
    site.add("oracle-plugin-a", plugin_code("a", extra_manifest="depends_on=['ghost'],"))
    site.add("oracle-plugin-b", plugin_code("b", extra_manifest="depends_on=['a'],"))
    site.add("oracle-plugin-c", plugin_code("c"))

    registry = site.oracle().registry

    assert list(registry.plugins) == ["c"]
    by_plugin = {f.plugin: str(f) for f in registry.failures}
    assert "'ghost' (not installed)" in by_plugin["a"]
    assert "'a' (failed to load)" in by_plugin["b"]
    assert all(isinstance(f, DependencyError) for f in registry.failures)


def test_depends_on_a_present_plugin_is_fine(site: SitePackages) -> None:
    site.add("oracle-plugin-a", plugin_code("a"))
    site.add("oracle-plugin-b", plugin_code("b", extra_manifest="depends_on=['a'],"))

    assert list(site.oracle().registry.plugins) == ["a", "b"]


def test_a_depends_on_cycle_is_refused(site: SitePackages) -> None:
    site.add("oracle-plugin-a", plugin_code("a", extra_manifest="depends_on=['b'],"))
    site.add("oracle-plugin-b", plugin_code("b", extra_manifest="depends_on=['a'],"))
    site.add("oracle-plugin-c", plugin_code("c"))

    registry = site.oracle().registry

    assert list(registry.plugins) == ["c"]
    assert sorted(f.plugin for f in registry.failures) == ["a", "b"]
    assert "depends_on forms a cycle" in str(registry.failures[0])


def test_length_limits_warn_but_the_plugin_loads(site: SitePackages) -> None:
    long_summary = "x" * 130
    code = plugin_code("wordy").replace('summary="The wordy plugin."', f'summary="{long_summary}"')
    site.add("oracle-plugin-wordy", code)

    registry = site.oracle().registry

    assert list(registry.plugins) == ["wordy"]
    [warning] = registry.warnings
    assert (warning.plugin, warning.field) == ("wordy", "summary")
    assert "130 characters; keep it within 120" in warning.message


def test_a_hook_returning_a_bare_function_says_to_decorate_it(site: SitePackages) -> None:
    site.add(
        "oracle-plugin-raw",
        plugin_code("raw").replace("return [raw_ping]", "return [helper]")
        + "\ndef helper(text: str) -> str:\n    return text\n",
    )

    failure = only_failure(site)

    assert "returned a function where a Tool belongs (decorate the function with @tool)" in str(
        failure
    )


BROKEN_IN_THREE_WAYS = '''
from oracle_core import Example, PluginManifest, hookimpl, tool


@tool
def lookup(text: str) -> str:
    """Look the text up."""
    return text


@tool(name="list_capabilities")
def listing() -> str:
    """List things."""
    return ""


@hookimpl
def oracle_manifest():
    return PluginManifest(
        name="broken",
        summary="Broken in three ways.",
        when_to_use=["never"],
        examples=[Example(user="hi", tool="find", args={})],
    )


@hookimpl
def oracle_tools():
    return [lookup, listing]


@hookimpl
def oracle_middleware():
    return "not a list"
'''

THREE_PROBLEMS = [
    "tool 'list_capabilities' has the name of a core meta-tool; rename it "
    "(@tool(name='broken_list_capabilities'))",
    "hook oracle_middleware returned str: return a list of Middleware",
    "manifest field 'examples[0].tool' names 'find', which is not a tool of this plugin "
    "(its tools: lookup, list_capabilities); name one of them",
]


def test_every_problem_of_a_plugin_is_reported_at_once(site: SitePackages) -> None:
    site.add("oracle-plugin-broken", BROKEN_IN_THREE_WAYS)

    failure = only_failure(site)

    assert failure.plugin == "broken"
    assert sorted(failure.problems) == sorted(THREE_PROBLEMS)
    assert str(failure).startswith("has 3 problems:\n    - ")
    assert all(f"\n    - {problem}" in str(failure) for problem in THREE_PROBLEMS)


def test_check_plugin_reports_the_same_problems_as_assembly(site: SitePackages) -> None:
    from oracle_core.testing import check_plugin

    site.add("oracle-plugin-broken", BROKEN_IN_THREE_WAYS)
    assembled = only_failure(site)
    import oracle_plugin_broken  # type: ignore[import-not-found]

    # ConformanceError is an AssertionError (the class itself may be a fresh import here:
    # the harness tests' inner pytest runs drop the modules they imported).
    with pytest.raises(AssertionError) as caught:
        check_plugin(oracle_plugin_broken)

    assert caught.value.problems == assembled.problems  # type: ignore[attr-defined]
    assert "plugin 'broken' fails 3 conformance check(s)" in str(caught.value)


class Coordinates:
    """A plain class: pydantic has no schema for it."""


@tool
def locate(where: Coordinates) -> str:
    """Find what is at a place (decorating succeeds: the schema is built on first need)."""
    return ""


def test_check_plugin_names_a_tool_whose_schema_cannot_be_built() -> None:
    from oracle_core.testing import check_plugin

    class Opaque:
        @hookimpl
        def oracle_manifest(self) -> PluginManifest:
            return PluginManifest(name="opaque", summary="Places.", when_to_use=["where"])

        @hookimpl
        def oracle_tools(self) -> list[object]:
            return [locate]

    with pytest.raises(AssertionError) as caught:  # a ConformanceError (maybe a fresh import)
        check_plugin(Opaque())

    [problem] = caught.value.problems  # type: ignore[attr-defined]
    assert problem.startswith("tool 'locate' (")
    assert "parameter 'where' has type" in problem
    assert "Coordinates, which pydantic cannot turn into a JSON schema" in problem
