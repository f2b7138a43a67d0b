"""``oracle plugin new`` scaffolds a package that installs and passes its own tests as generated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs subprocesses: `pytest -m 'not slow'` skips it

ORACLE = [sys.executable, "-m", "oracle_core"]

# The generated suite runs on the in-process scripted model: it never pays litellm's import.
PYTEST_THEN_REPORT_LITELLM = (
    "import sys, pytest\n"
    "code = pytest.main(['-q', '-p', 'no:cacheprovider'])\n"
    "print('litellm imported:', 'litellm' in sys.modules)\n"
    "sys.exit(code)\n"
)


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_new_plugin_installs_is_discovered_and_passes_its_own_tests(tmp_path: Path) -> None:
    created = run([*ORACLE, "plugin", "new", "hello-world", "--directory", str(tmp_path)], tmp_path)
    package = tmp_path / "oracle-plugin-hello-world"
    site = tmp_path / "site"

    installed = run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(package),
        ],
        tmp_path,
    )
    listed = run(
        [*ORACLE, "plugins", "--json"],
        tmp_path,
        PYTHONPATH=str(site),
        ORACLE_LOAD_PLUGINS="hello-world",
        ORACLE_HOME=str(tmp_path / "home"),
    )
    tested = run([sys.executable, "-c", PYTEST_THEN_REPORT_LITELLM], package, PYTHONPATH=str(site))
    linted = run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], package)

    assert created.returncode == 0, created.stderr
    assert installed.returncode == 0, installed.stderr
    report = json.loads(listed.stdout)
    assert report["failures"] == [] and report["warnings"] == []
    [plugin] = report["plugins"]
    assert (plugin["name"], plugin["distribution"], plugin["visibility"]) == (
        "hello-world",
        "oracle-plugin-hello-world",
        "on-demand",
    )
    assert [t["name"] for t in plugin["tools"]] == ["hello_world_greet"]
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "4 passed" in tested.stdout
    assert "litellm imported: False" in tested.stdout
    assert linted.returncode == 0, linted.stdout


@pytest.mark.parametrize(
    ("name", "message"), [("Bad Name", "not a valid plugin name"), ("taken", "already exists")]
)
def test_bad_names_and_existing_folders_are_refused(
    tmp_path: Path, name: str, message: str
) -> None:
    (tmp_path / "oracle-plugin-taken").mkdir()

    result = run([*ORACLE, "plugin", "new", name, "--directory", str(tmp_path)], tmp_path)

    assert result.returncode == 2
    assert message in result.stderr
