"""``oracle plugin new``: the files of a complete, installable, tested plugin package.

The package it writes installs, is discovered, passes its own tests, ``ruff check`` and
``ruff format --check`` as generated, and carries what a repository needs on day one: a
``.gitignore``, a ``LICENSE`` matching the ``license`` field of its ``pyproject.toml``
(an SPDX expression, with ``license-files``), and a GitHub Actions workflow that lints and
tests it.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from oracle_core.authoring.manifest import NAME_PATTERN
from oracle_core.cli.scaffold_core import is_remote
from oracle_core.plugins.core_tools import LIST_CAPABILITIES, LOAD_CAPABILITY, SEARCH_CAPABILITIES
from oracle_core.version import DISTRIBUTION

DIST_PREFIX = "oracle-plugin-"
"""What a plugin's distribution name starts with; ``oracle plugin new`` adds it, once."""

NAME_MAX = 40
"""The longest plugin name the scaffold takes (so every generated line fits 100 columns)."""

LICENSES = ("Apache-2.0", "MIT")
"""The licenses ``oracle plugin new --license`` can write (SPDX identifiers)."""

_LICENSE_FOLDER = Path(__file__).parents[1] / "licenses"

PYPROJECT = """[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1.0"
description = "{title} for oracle-core agents."
readme = "README.md"
requires-python = ">=3.11"
license = "{license}"
license-files = ["LICENSE"]
dependencies = ["{core}", "pydantic>=2.7"]

[project.optional-dependencies]
test = ["pytest>=8", "pytest-asyncio>=0.24"]

[project.entry-points."oracle.plugins"]
{name} = "{module}"

[tool.setuptools.packages.find]
include = ["{module}*"]

[tool.setuptools.package-data]
{module} = ["py.typed"]

[tool.pytest.ini_options]
testpaths = ["tests"]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"

[tool.ruff]
line-length = 100

[tool.ruff.lint]
select = ["E", "F", "W", "I", "B", "UP"]
"""

MODULE = '''"""A plugin for oracle-core agents: {title}.

Found through its ``oracle.plugins`` entry point once installed; ``oracle plugins`` lists it.
"""

from __future__ import annotations

from oracle_core import Example, PluginManifest, Tool, ToolContext, hookimpl, tool
from pydantic import BaseModel, ConfigDict


class Config(BaseModel):
    """The plugin's settings, from its table in ``oracle.toml``:
    ``[plugins.{name}]``.

    oracle-core checks them when the oracle starts (an unknown key or a value of the wrong
    type leaves the plugin out, naming the key); tools get the instance as ``ctx.config``.
    A secret is written ``token = "$SOME_VARIABLE"`` and read from the environment.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    greeting: str = "Hello"


@tool
def {tool}(name: str, *, ctx: ToolContext) -> str:
    """Greet someone by name. Replace this tool with what your plugin really does.

    Args:
        name: who to greet.
    """
    config: Config = ctx.config
    return f"{{config.greeting}}, {{name}}!"


@hookimpl
def oracle_manifest() -> PluginManifest:
    """Describe the plugin to the core and to the model."""
    return PluginManifest(
        name="{name}",
        title="{title}",
        summary="Greets people by name (a new plugin: say what yours does here).",
        when_to_use=["the user wants to greet someone"],
        when_not_to_use=["anything that is not a greeting"],
        examples=[
            Example(
                user="Say hello to Ana",
                tool="{tool}",
                args={{"name": "Ana"}},
            ),
        ],
        tags=["example"],
        visibility="{visibility}",
        config=Config,
    )


@hookimpl
def oracle_tools() -> list[Tool]:
    """The plugin's tools."""
    return [{tool}]
'''

TESTS = '''"""The plugin's tests, written with oracle-core's pytest harness (its docs/testing.md)."""

from __future__ import annotations

from oracle_core import Oracle
from oracle_core.testing import (
    OracleFactory,
    ScriptedModel,
    assert_findable,
    assert_shown,
    assert_tool_called,
    call_tool,
    check_plugin,
    run_turn,
)

import {module} as plugin

NAME = "{name}"
TOOL = "{tool}"


def test_the_plugin_conforms() -> None:
    check_plugin(plugin)


def test_requests_in_users_words_find_it() -> None:
    # Its examples and these requests must find it in the first 3 of {search_tool}'
    # candidates among 2,000 other tools: add the ways your users ask for it.
    assert_findable(plugin, requests=["greet my friend Ana"], within=3)


async def test_the_tool_greets_by_name(oracle_factory: OracleFactory) -> None:
    oracle: Oracle = oracle_factory(plugin)

    assert await call_tool(oracle, TOOL, {{"name": "Ana"}}) == "Hello, Ana!"


async def test_the_greeting_comes_from_the_plugin_config(oracle_factory: OracleFactory) -> None:
    oracle = oracle_factory(plugin, config={{NAME: {{"greeting": "Hi"}}}})

    assert await call_tool(oracle, TOOL, {{"name": "Ana"}}) == "Hi, Ana!"


async def test_the_model_finds_loads_and_calls_it(
    oracle_factory: OracleFactory, oracle_model: ScriptedModel
) -> None:
    oracle = oracle_factory(plugin)
    oracle_model.reply_tool_call("{list_tool}", {{}})
    oracle_model.reply_tool_call("{load_tool}", {{"names": [NAME]}})
    oracle_model.reply_tool_call(TOOL, {{"name": "Ana"}})
    oracle_model.reply_text("I said hello to Ana.")

    result = await run_turn(oracle, "Say hello to Ana")

    assert result.answer == "I said hello to Ana."
    assert_tool_called(result, TOOL, {{"name": "Ana"}})
    assert_shown(oracle_model.request(1), hidden=[TOOL])
    assert_shown(oracle_model.request(3), tools=[TOOL])
'''

README = """# {dist}

{title}: a plugin for oracle-core agents (the `{core}` distribution).

```sh
pip install .             # from this folder (once it is published: pip install {dist})
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

or `ORACLE_PLUGIN_{env}__GREETING=Hi`. The settings are the `Config` model in
`{module}/__init__.py`: oracle-core checks them when the oracle starts, and an unknown key or
a value of the wrong type leaves the plugin out, named in `oracle plugins`.

## Development

```sh
{core_step}pip install -e '.[test]' ruff
pytest
ruff format --check . && ruff check .
```

{core_note}

`.github/workflows/test.yml` runs the same on every push and pull request.

## License

{license}; see `LICENSE`.
"""

GITIGNORE = """__pycache__/
*.py[cod]
*.egg-info/
build/
dist/
.venv/
.pytest_cache/
.ruff_cache/
.mypy_cache/
.coverage
htmlcov/
"""

# Written as is (no str.format): the workflow's own ${{ ... }} expressions stay intact.
WORKFLOW = """name: test

on:
  push:
  pull_request:

jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      fail-fast: false
      matrix:
        python-version: ["3.11", "3.12", "3.13"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python-version }}
      - name: Install
        run: python -m pip install -e '.[test]' ruff
      - name: Lint
        run: |
          ruff format --check .
          ruff check .
      - name: Test
        run: python -m pytest
"""

CORE_STEP = "pip install {install}  # oracle-core first: {core} is not on the package index yet\n"

CORE_NOTE_INSTALLED = (
    "The first line installs oracle-core from where this package was made (`oracle plugin new "
    "--core PATH_OR_URL` chooses); `pyproject.toml` depends on `{core}`, which pip then finds "
    "installed. Drop that line once `{core}` is on the package index."
)

CORE_NOTE_INDEX = (
    "`pyproject.toml` depends on `{core}` from the package index. Until it is published there, "
    "install oracle-core first, from a checkout (`pip install -e /path/to/oracle-core`) or a "
    'git URL (`pip install "{core} @ git+https://.../oracle-core.git"`).'
)

_PLUGIN_INSTALL = "python -m pip install -e '.[test]' ruff"
"""The workflow's install step (the core goes first when it comes from a URL)."""

MIT = """MIT License

Copyright (c) {year} The {dist} authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


def plugin_name(name: str) -> str:
    """The plugin name for ``name``, which may be given with its distribution prefix.

    ``oracle-plugin-foo`` and ``foo`` both give ``foo``, so the package is the same.

    Raises:
        ValueError: when what remains is not a valid plugin name.
    """
    bare = name.strip()
    for prefix in (DIST_PREFIX, DIST_PREFIX.replace("-", "_")):
        bare = bare.removeprefix(prefix)
    if len(bare) > NAME_MAX:
        raise ValueError(
            f"{name!r} is too long for a new plugin: keep its name within {NAME_MAX} characters"
        )
    if not NAME_PATTERN.fullmatch(bare):
        raise ValueError(
            f"{name!r} is not a valid plugin name: use lowercase letters, digits, '-' and '_', "
            "starting with a letter (for example 'my-plugin' or 'oracle-plugin-my-plugin')"
        )
    return bare


def license_text(license: str, dist: str, year: int | None = None) -> str:
    """The ``LICENSE`` file for the SPDX identifier ``license``.

    Raises:
        ValueError: for a license the scaffold does not ship (see :data:`LICENSES`).
    """
    if license == "Apache-2.0":
        return (_LICENSE_FOLDER / "Apache-2.0.txt").read_text(encoding="utf-8")
    if license == "MIT":
        return MIT.format(year=year or datetime.date.today().year, dist=dist)
    raise ValueError(f"no license text for {license!r}: choose one of {', '.join(LICENSES)}")


def plugin_files(
    name: str, visibility: str = "on-demand", license: str = "Apache-2.0", core_install: str = ""
) -> dict[str, str]:
    """The files of a new plugin package called ``name``, by relative path.

    Args:
        name: the plugin's name, with or without the ``oracle-plugin-`` prefix.
        visibility: its tier.
        license: the SPDX identifier of its license (one of :data:`LICENSES`).
        core_install: the ``pip install`` arguments of oracle-core, which its README and
            (for a URL) its workflow install first; ``""`` when the package index has it
            (see :mod:`oracle_core.cli.scaffold_core`).

    Raises:
        ValueError: when ``name`` is not a valid plugin name, or ``license`` unknown.
    """
    name = plugin_name(name)
    snake = name.replace("-", "_")
    values = {
        "name": name,
        "dist": f"oracle-plugin-{name}",
        "module": f"oracle_plugin_{snake}",
        "tool": f"{snake}_greet",
        "title": name.replace("-", " ").replace("_", " ").title(),
        "visibility": visibility,
        "env": snake.upper(),
        "license": license,
        "core": DISTRIBUTION,
        "list_tool": LIST_CAPABILITIES,
        "load_tool": LOAD_CAPABILITY,
        "search_tool": SEARCH_CAPABILITIES,
    }
    module = values["module"]
    step = CORE_STEP.format(install=core_install, core=DISTRIBUTION) if core_install else ""
    note = CORE_NOTE_INSTALLED if core_install else CORE_NOTE_INDEX
    workflow = WORKFLOW
    if is_remote(core_install):  # a path on this machine means nothing to a CI runner
        workflow = WORKFLOW.replace(
            f"        run: {_PLUGIN_INSTALL}\n",
            f"        run: |\n          python -m pip install {core_install}\n"
            f"          {_PLUGIN_INSTALL}\n",
        )
    return {
        "pyproject.toml": PYPROJECT.format(**values),
        "README.md": README.format(
            **values, core_step=step, core_note=note.format(core=DISTRIBUTION)
        ),
        "LICENSE": license_text(license, values["dist"]),
        ".gitignore": GITIGNORE,
        ".github/workflows/test.yml": workflow,
        f"{module}/__init__.py": MODULE.format(**values),
        f"{module}/py.typed": "",
        f"tests/test_{snake}.py": TESTS.format(**values),
    }


def write_plugin(
    directory: Path,
    name: str,
    visibility: str = "on-demand",
    license: str = "Apache-2.0",
    core_install: str = "",
) -> Path:
    """Write a new plugin package into ``directory/oracle-plugin-<name>`` and return that folder.

    ``name`` may carry the ``oracle-plugin-`` prefix: ``oracle-plugin-foo`` and ``foo``
    write the same package; ``core_install`` is as for :func:`plugin_files`.

    Raises:
        FileExistsError: when the folder already exists (nothing is overwritten).
        ValueError: when ``name`` is not a valid plugin name, or ``license`` unknown.
    """
    files = plugin_files(name, visibility, license, core_install)
    root = directory / f"{DIST_PREFIX}{plugin_name(name)}"
    if root.exists():
        raise FileExistsError(f"{root} already exists: choose another name or folder")
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
