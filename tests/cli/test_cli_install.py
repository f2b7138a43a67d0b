"""``oracle install`` / ``uninstall``: pip run by the interpreter ``oracle`` runs in, so a
pipx-installed oracle gets its plugins. Offline: a local package folder, no index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs pip and `oracle` subprocesses

PACKAGE = {
    "pyproject.toml": """\
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "oracle-plugin-localdemo"
        version = "0.3.0"

        [project.entry-points."oracle.plugins"]
        localdemo = "oracle_plugin_localdemo"
    """,
    "oracle_plugin_localdemo.py": '''\
        from oracle_core import PluginManifest, hookimpl, tool

        @tool
        def shout(text: str) -> str:
            """Say it louder."""
            return text.upper()

        @hookimpl
        def oracle_manifest():
            return PluginManifest(name="localdemo", summary="Local demo.", when_to_use=["tests"])

        @hookimpl
        def oracle_tools():
            return [shout]
    ''',
}


def oracle(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oracle_core", *args],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """The folder of a local plugin package (:data:`PACKAGE`)."""
    folder = tmp_path / "localdemo"
    folder.mkdir()
    for name, text in PACKAGE.items():
        (folder / name).write_text(textwrap.dedent(text))
    return folder


def test_install_puts_a_local_plugin_where_oracle_finds_it(tmp_path: Path, source: Path) -> None:
    target = tmp_path / "target"
    env = {**os.environ, "ORACLE_HOME": str(tmp_path / "home"), "PIP_NO_INPUT": "1"}

    installed = oracle(
        "install", "--target", str(target), "--no-index", "--no-build-isolation", str(source),
        env=env,
    )  # fmt: skip
    listed = oracle(
        "plugins", "--json",
        env={**env, "PYTHONPATH": str(target), "ORACLE_LOAD_PLUGINS": "localdemo"},
    )  # fmt: skip

    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "oracle plugins` shows the plugins now available" in installed.stderr
    report = json.loads(listed.stdout)
    assert [(p["name"], p["version"]) for p in report["plugins"]] == [("localdemo", "0.3.0")]


def test_uninstall_runs_pip_uninstall_in_this_interpreter(tmp_path: Path) -> None:
    fake = tmp_path / "fakepip" / "pip"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text(
        "import json, os, sys\n"
        "with open(os.environ['PIP_RECORD'], 'w') as f:\n"
        "    json.dump({'argv': sys.argv[1:], 'python': sys.executable}, f)\n"
        "sys.exit(3)\n"
    )
    record = tmp_path / "record.json"
    env = {**os.environ, "PYTHONPATH": str(fake.parent), "PIP_RECORD": str(record)}

    result = oracle("uninstall", "oracle-plugin-x", "-y", env=env)

    called = json.loads(record.read_text())
    assert result.returncode == 3  # pip's own status
    assert called["argv"] == ["uninstall", "-y", "oracle-plugin-x"]
    assert Path(called["python"]).resolve() == Path(sys.executable).resolve()


def test_install_without_packages_is_a_usage_error(tmp_path: Path) -> None:
    result = oracle("install", env={**os.environ, "ORACLE_HOME": str(tmp_path)})

    assert result.returncode == 2
    assert "Missing argument 'PACKAGES...'" in result.stderr


def test_a_dry_run_says_nothing_was_installed(tmp_path: Path, source: Path) -> None:
    target = tmp_path / "target"
    env = {**os.environ, "ORACLE_HOME": str(tmp_path / "home"), "PIP_NO_INPUT": "1"}

    result = oracle(
        "install", "--dry-run", "--target", str(target), "--no-index", "--no-build-isolation",
        str(source), env=env,
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    assert "Would install oracle-plugin-localdemo-0.3.0" in result.stdout
    assert "Installed." not in result.stderr
    assert "Dry run (--dry-run): nothing was installed" in result.stderr
    assert not target.exists() or not any(target.iterdir())
