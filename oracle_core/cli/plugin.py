"""``oracle plugin``: tools for plugin authors."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("plugin")
def plugin_group() -> None:
    """Create plugins."""


@plugin_group.command("new")
@click.argument("name")
@click.option(
    "--directory",
    "-d",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where to create the package folder.",
)
@click.option(
    "--visibility",
    type=click.Choice(["on-demand", "always", "silent"]),
    default="on-demand",
    show_default=True,
    help="The plugin's tier.",
)
@click.option(
    "--license",
    "license_",
    type=click.Choice(["Apache-2.0", "MIT"]),
    default="Apache-2.0",
    show_default=True,
    help="The package's license (SPDX): its pyproject field and LICENSE file.",
)
@click.option(
    "--core",
    metavar="PATH_OR_URL",
    help="Where the plugin's README and workflow install oracle-core from until "
    "oracle-core-runtime is on the package index: a checkout's folder or a URL pip takes "
    "(git+https://...). [default: where this oracle-core comes from]",
)
def new_command(
    name: str, directory: Path, visibility: str, license_: str, core: str | None
) -> None:
    """Scaffold a complete plugin package NAME: pyproject, manifest, a tool, README, tests.

    NAME is the plugin's name, with or without its distribution prefix: `foo` and
    `oracle-plugin-foo` both write ./oracle-plugin-foo (module oracle_plugin_foo). The
    package also gets a LICENSE, a .gitignore and a GitHub Actions workflow
    (.github/workflows/test.yml) that runs ruff and its tests.
    """
    from oracle_core.cli.scaffold import write_plugin
    from oracle_core.cli.scaffold_core import core_install

    try:
        install = core_install(core)
        root = write_plugin(directory, name, visibility, license_, install)
    except (FileExistsError, ValueError) as error:
        raise click.UsageError(str(error)) from None
    click.echo(f"Created {root}")
    first = f"  pip install {install}   # oracle-core, in a new environment\n" if install else ""
    click.echo(f"Next:\n  cd {root}\n{first}  pip install -e '.[test]'\n  pytest\n  oracle plugins")
