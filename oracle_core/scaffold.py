"""``oracle plugin new``: the files of a complete, installable, tested plugin package."""

from __future__ import annotations

from pathlib import Path

from oracle_core.manifest import NAME_PATTERN

PYPROJECT = """[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1.0"
description = "{title} for oracle-core agents."
readme = "README.md"
requires-python = ">=3.11"
license = "Apache-2.0"
dependencies = ["oracle-core"]

[project.optional-dependencies]
test = ["pytest>=8", "pytest-asyncio>=0.23"]

[project.entry-points."oracle.plugins"]
{name} = "{module}"

[tool.setuptools.packages.find]
include = ["{module}*"]

[tool.setuptools.package-data]
{module} = ["py.typed"]

[tool.pytest.ini_options]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
"""

MODULE = '''"""{title}: a plugin for oracle-core agents.

Found through its ``oracle.plugins`` entry point once installed; ``oracle plugins`` lists it.
"""

from __future__ import annotations

from oracle_core import Example, PluginManifest, Tool, ToolContext, hookimpl, tool


@tool
def {tool}(name: str, *, ctx: ToolContext) -> str:
    """Greet someone by name. Replace this tool with what your plugin really does.

    Args:
        name: who to greet.
    """
    greeting = ctx.config.get("greeting", "Hello")
    return f"{{greeting}}, {{name}}!"


@hookimpl
def oracle_manifest() -> PluginManifest:
    """Describe the plugin to the core and to the model."""
    return PluginManifest(
        name="{name}",
        title="{title}",
        summary="Greets people by name (a new plugin: say what yours does here).",
        when_to_use=["the user wants to greet someone"],
        when_not_to_use=["anything that is not a greeting"],
        examples=[Example(user="Say hello to Ana", tool="{tool}", args={{"name": "Ana"}})],
        tags=["example"],
        visibility="{visibility}",
    )


@hookimpl
def oracle_tools() -> list[Tool]:
    """The plugin's tools."""
    return [{tool}]
'''

TESTS = '''"""Tests of {dist}, written with the oracle-core pytest harness (docs: testing.md)."""

from __future__ import annotations

from oracle_core import Oracle
from oracle_core.testing import (
    OracleFactory,
    ScriptedModel,
    assert_shown,
    assert_tool_called,
    call_tool,
    check_plugin,
    run_turn,
)

import {module}


def test_the_plugin_conforms() -> None:
    check_plugin({module})


async def test_the_tool_greets_by_name(oracle_factory: OracleFactory) -> None:
    oracle: Oracle = oracle_factory({module})

    assert await call_tool(oracle, "{tool}", {{"name": "Ana"}}) == "Hello, Ana!"


async def test_the_greeting_comes_from_the_plugin_config(oracle_factory: OracleFactory) -> None:
    oracle = oracle_factory({module}, config={{"{name}": {{"greeting": "Hi"}}}})

    assert await call_tool(oracle, "{tool}", {{"name": "Ana"}}) == "Hi, Ana!"


async def test_the_model_finds_loads_and_calls_it(
    oracle_factory: OracleFactory, oracle_model: ScriptedModel
) -> None:
    oracle = oracle_factory({module})
    oracle_model.reply_tool_call("list_capabilities", {{}})
    oracle_model.reply_tool_call("load_capability", {{"names": ["{name}"]}})
    oracle_model.reply_tool_call("{tool}", {{"name": "Ana"}})
    oracle_model.reply_text("I said hello to Ana.")

    result = await run_turn(oracle, "Say hello to Ana")

    assert result.answer == "I said hello to Ana."
    assert_tool_called(result, "{tool}", {{"name": "Ana"}})
    assert_shown(oracle_model.request(1), hidden=["{tool}"])
    assert_shown(oracle_model.request(3), tools=["{tool}"])
'''

README = """# {dist}

{title}: a plugin for [oracle-core](https://pypi.org/project/oracle-core/) agents.

```sh
pip install {dist}
oracle plugins            # lists "{name}"
oracle ask "Say hello to Ana"
```

## Tools

- `{tool}(name)`: greets someone by name.

## Configuration

In `$ORACLE_HOME/oracle.toml`:

```toml
[plugins.{name}]
greeting = "Hi"
```

or `ORACLE_PLUGIN_{env}__GREETING=Hi`.

## Development

```sh
pip install -e '.[test]'
pytest
```
"""


def plugin_files(name: str, visibility: str = "on-demand") -> dict[str, str]:
    """The files of a new plugin package called ``name``, by relative path.

    Raises:
        ValueError: when ``name`` is not a valid plugin name.
    """
    if not NAME_PATTERN.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a valid plugin name: use lowercase letters, digits, '-' and '_', "
            "starting with a letter (for example 'my-plugin')"
        )
    snake = name.replace("-", "_")
    values = {
        "name": name,
        "dist": f"oracle-plugin-{name}",
        "module": f"oracle_plugin_{snake}",
        "tool": f"{snake}_greet",
        "title": name.replace("-", " ").replace("_", " ").title(),
        "visibility": visibility,
        "env": snake.upper(),
    }
    module = values["module"]
    return {
        "pyproject.toml": PYPROJECT.format(**values),
        "README.md": README.format(**values),
        f"{module}/__init__.py": MODULE.format(**values),
        f"{module}/py.typed": "",
        f"tests/test_{snake}.py": TESTS.format(**values),
    }


def write_plugin(directory: Path, name: str, visibility: str = "on-demand") -> Path:
    """Write a new plugin package into ``directory/oracle-plugin-<name>`` and return that folder.

    Raises:
        FileExistsError: when the folder already exists (nothing is overwritten).
        ValueError: when ``name`` is not a valid plugin name.
    """
    files = plugin_files(name, visibility)
    root = directory / f"oracle-plugin-{name}"
    if root.exists():
        raise FileExistsError(f"{root} already exists: choose another name or folder")
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
