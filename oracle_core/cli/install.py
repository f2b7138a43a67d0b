"""``oracle install`` / ``oracle uninstall``: pip, in the interpreter ``oracle`` runs in.

An ``oracle`` installed with pipx (or in any virtual environment) finds plugins only in its
own environment; these commands put them there, as ``llm install`` does. Options pip knows
(``-U``, ``-e PATH``, ``--index-url``, ...) are passed on as given.
"""

from __future__ import annotations

import subprocess
import sys

import click

_PASS_ON = {"ignore_unknown_options": True, "allow_interspersed_args": False}


def pip(*arguments: str) -> int:
    """Run ``python -m pip ARGUMENTS`` with the interpreter running ``oracle``; its exit code."""
    return subprocess.call([sys.executable, "-m", "pip", *arguments])


@click.command("install", context_settings=_PASS_ON)
@click.argument("packages", nargs=-1, required=True, type=click.UNPROCESSED)
def install_command(packages: tuple[str, ...]) -> None:
    """Install plugin PACKAGES (and pip options) into oracle's own environment.

    For example `oracle install oracle-plugin-weather`, `oracle install -U NAME` or
    `oracle install -e ./my-plugin`. `oracle plugins` then lists what was installed;
    with --dry-run, pip only says what it would install.
    """
    code = pip("install", *packages)
    if code == 0:
        click.echo(_DRY_RUN if "--dry-run" in packages else _INSTALLED, err=True)
    sys.exit(code)


_INSTALLED = "Installed. `oracle plugins` shows the plugins now available."
_DRY_RUN = "Dry run (--dry-run): nothing was installed; pip said above what it would install."


@click.command("uninstall", context_settings={"ignore_unknown_options": True})
@click.argument("packages", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def uninstall_command(packages: tuple[str, ...], yes: bool) -> None:
    """Uninstall PACKAGES from oracle's own environment (works even when a plugin is broken)."""
    sys.exit(pip("uninstall", *(("-y",) if yes else ()), *packages))
