"""Installing from source as the docs say, in a fresh virtual environment outside this
checkout (the package index serves only third-party packages: oracle-core-runtime is not
published yet).

A plugin made by ``oracle plugin new`` installs as its README says (the core from this
checkout first, then the plugin with its test extra) and passes its generated tests; then
README.md's git URL lines, with this checkout's git repository as ``$REPO``, install the core
and a plugin of this repository from it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def sh_block(markdown: str, after: str) -> list[str]:
    """The lines of the first ```sh block after the text ``after``."""
    start = markdown.index(after)
    match = re.search(r"```sh\n(.*?)```", markdown[start:], re.S)
    assert match, f"no sh block after {after!r}"
    return [line for line in match[1].splitlines() if line.strip()]


def bash(line: str, cwd: Path, venv: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``line`` in bash with ``venv`` active, as a user would type it there."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ORACLE_", "PYTHON"))}
    clean.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{clean.get('PATH', '')}", VIRTUAL_ENV=str(venv), **env
    )
    clean.pop("VIRTUAL_ENV_PROMPT", None)
    return subprocess.run(
        ["bash", "-ec", line],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


ORIGIN = (
    "from importlib import metadata\n"
    "print(metadata.distribution('oracle-core-runtime').read_text('direct_url.json'))\n"
)


def core_origin(venv: Path) -> dict[str, object]:
    """The PEP 610 record of where the venv's oracle-core-runtime was installed from."""
    python = str(venv / "bin" / "python")
    found = subprocess.run(
        [python, "-c", ORIGIN], cwd=venv, capture_output=True, text=True, timeout=60, check=True
    )
    return dict(json.loads(found.stdout))


@pytest.mark.slow  # a fresh venv: about two minutes, most of it the core's dependencies
def test_a_new_plugin_and_the_git_url_forms_install_outside_the_checkout(tmp_path: Path) -> None:
    assert not tmp_path.resolve().is_relative_to(ROOT)
    made = subprocess.run(
        [sys.executable, "-m", "oracle_core", "plugin", "new", "hello", "-d", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    package = tmp_path / "oracle-plugin-hello"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    steps = sh_block((package / "README.md").read_text(), "## Development")

    done = [bash(step, package, venv) for step in steps]

    assert made.returncode == 0, made.stderr
    assert steps[0].startswith(f"pip install -e {ROOT} "), steps  # the core, from this checkout
    for step, result in zip(steps, done, strict=True):
        assert result.returncode == 0, f"{step}\n{result.stdout}\n{result.stderr}"
    assert "5 passed" in done[steps.index("pytest")].stdout
    assert core_origin(venv)["dir_info"] == {"editable": True}

    if not (ROOT / ".git").exists():
        pytest.skip(f"{ROOT} is not a git checkout: README.md's git URL lines were not tried")
    lines = [
        line
        for line in sh_block((ROOT / "README.md").read_text(), "or from its git URL")
        if line.startswith("pip install")
    ]
    home = tmp_path / "home"
    # With a host: the pip a new venv brings (23.2 on Python 3.11) refuses git+file:///path.
    repo = f"file://localhost{ROOT.as_posix()}"
    installed = [bash(line, tmp_path, venv, REPO=repo) for line in lines]
    listed = bash("oracle plugins --json", tmp_path, venv, ORACLE_HOME=str(home))

    assert len(lines) == 2
    for line, result in zip(lines, installed, strict=True):
        assert result.returncode == 0, f"{line}\n{result.stderr}"
    assert "vcs_info" in core_origin(venv)
    report = json.loads(listed.stdout)
    assert sorted(p["name"] for p in report["plugins"]) == ["hello", "weather"]
    assert report["failures"] == []
