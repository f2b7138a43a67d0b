"""The core's distribution name: `oracle-core` on the package index is an unrelated project,
so the core is `oracle-core-runtime` and everything that installs it says so.

Whether the first-party names are still free (or ours) on PyPI needs the network, so
``scripts/check_names.sh`` asks by hand; these tests stay offline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from oracle_core.cli.scaffold import plugin_files, write_plugin
from oracle_core.version import DISTRIBUTION

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_PROJECTS = sorted(
    [*ROOT.glob("plugins/*/pyproject.toml"), *ROOT.glob("contrib/*/pyproject.toml")]
)
OLD_NAME = "oracle-core"  # another project's name on PyPI (a prediction engine)


def installed_as() -> set[str]:
    """The distributions that provide the import package ``oracle_core`` here."""
    return set(metadata.packages_distributions().get("oracle_core", []))


def core_requirements(pyproject: dict[str, object]) -> list[Requirement]:
    """Every requirement on the core, in dependencies and extras, by either name."""
    project = pyproject["project"]
    assert isinstance(project, dict)
    lines = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        lines.extend(extra)
    core = {canonicalize_name(DISTRIBUTION), canonicalize_name(OLD_NAME)}
    return [r for r in map(Requirement, lines) if canonicalize_name(r.name) in core]


def test_the_core_is_installed_under_its_distribution_name() -> None:
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())

    assert root["project"]["name"] == DISTRIBUTION
    assert installed_as() == {DISTRIBUTION}, (
        f"oracle_core is installed as {sorted(installed_as())}: remove the stale install "
        f"(`pip uninstall {OLD_NAME}`) and reinstall with `make`"
    )


def test_the_scaffold_depends_on_the_distribution_the_core_is_installed_as() -> None:
    pyproject = tomllib.loads(plugin_files("foo")["pyproject.toml"])

    [requirement] = core_requirements(pyproject)
    assert installed_as() == {requirement.name}
    # Named, not linked: the distribution has no page on the package index until published.
    assert f"(the `{DISTRIBUTION}` distribution)" in plugin_files("foo")["README.md"]


@pytest.mark.parametrize("path", PLUGIN_PROJECTS, ids=lambda p: p.parent.name)
def test_every_first_party_plugin_depends_on_the_core_by_its_distribution_name(path: Path) -> None:
    requirements = core_requirements(tomllib.loads(path.read_text()))

    assert requirements, f"{path.relative_to(ROOT)} does not depend on {DISTRIBUTION}"
    assert {r.name for r in requirements} == {DISTRIBUTION}


def test_the_first_party_plugins_are_all_checked() -> None:
    assert {p.parent.name for p in PLUGIN_PROJECTS} >= {
        "oracle-plugin-weather",
        "oracle-plugin-memory",
        "oracle-plugin-audit",
        "oracle-plugin-calculator",
        "oracle-plugin-clock",
    }


def pip(*args: str, cwd: Path, python: str = sys.executable, **env: str) -> str:
    """Run pip offline: no index, no configured wheel folders or constraints."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    result = subprocess.run(
        [python, "-m", "pip", "--disable-pip-version-check", *args],
        cwd=cwd,
        env={**clean, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def build_wheels(sources: list[Path], into: Path) -> None:
    pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(into), *map(str, sources), cwd=into)


def core_source(tmp_path: Path) -> Path:
    """A copy of this checkout's core, so the build leaves nothing in the repository."""
    source = tmp_path / "core"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "oracle_core", source / "oracle_core", ignore=shutil.ignore_patterns("__pycache__")
    )
    return source


def decoy_source(tmp_path: Path) -> Path:
    """A stand-in for the other project called ``oracle-core``, at a higher version."""
    source = tmp_path / "decoy"
    (source / "oracle_core").mkdir(parents=True)
    (source / "oracle_core" / "__init__.py").write_text("")
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{OLD_NAME}"\nversion = "99.0"\n'
    )
    return source


def site_without_the_core(tmp_path: Path) -> Path:
    """This environment's packages minus the core's: the core's dependencies are there
    (so nothing is fetched) and the core itself must come from the local build."""
    farm = tmp_path / "site"
    farm.mkdir()
    purelib = Path(sysconfig.get_paths()["purelib"])
    for entry in purelib.iterdir():
        if entry.name.startswith(("oracle_core", "oracle_plugin", "__editable__")):
            continue
        (farm / entry.name).symlink_to(entry)
    return farm


@pytest.mark.slow  # builds three wheels and runs pip's resolver in subprocesses
def test_a_scaffolded_plugin_wheel_resolves_to_this_core_offline(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    plugin = write_plugin(tmp_path, "hello")
    build_wheels([core_source(tmp_path), decoy_source(tmp_path), plugin], wheels)
    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=False)
    python = str(fresh / "bin" / "python")
    report = tmp_path / "report.json"

    pip(
        "install", "--dry-run", "--find-links", str(wheels), "--report", str(report),
        "oracle-plugin-hello",
        cwd=tmp_path, python=python, PYTHONPATH=str(site_without_the_core(tmp_path)),
    )  # fmt: skip

    chosen = {
        item["metadata"]["name"]: item["download_info"]["url"]
        for item in json.loads(report.read_text())["install"]
    }
    [core_wheel] = wheels.glob("oracle_core_runtime-*.whl")
    assert chosen == {
        "oracle-plugin-hello": next(wheels.glob("oracle_plugin_hello-*.whl")).as_uri(),
        DISTRIBUTION: core_wheel.as_uri(),
    }
