"""``oracle plugin new`` scaffolds a package that installs and passes its own tests as generated."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from oracle_core.cli import main
from oracle_core.cli.scaffold import NAME_MAX, plugin_files

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


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def workflow_steps(package: Path) -> dict[str, str]:
    """The named ``run`` steps of the package's CI workflow."""
    workflow = yaml.safe_load((package / ".github/workflows/test.yml").read_text())
    [job] = workflow["jobs"].values()
    return {step["name"]: step["run"] for step in job["steps"] if "run" in step}


@pytest.mark.slow  # runs subprocesses: `pytest -m 'not slow'` skips it
def test_a_new_plugin_installs_is_discovered_and_passes_its_own_tests_and_workflow(
    tmp_path: Path,
) -> None:
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
    # The workflow's own lint and test steps, as CI would run them after its install step.
    steps = workflow_steps(package)
    bin_dir = str(Path(sys.executable).parent)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    linted = run(["bash", "-ec", steps["Lint"]], package, PATH=path, RUFF_NO_CACHE="true")
    ci_tested = run(["bash", "-ec", steps["Test"]], package, PATH=path, PYTHONPATH=str(site))

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
    assert "5 passed" in tested.stdout
    assert "litellm imported: False" in tested.stdout
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert ci_tested.returncode == 0 and "5 passed" in ci_tested.stdout, ci_tested.stdout
    # The built distribution says its license the PEP 639 way and ships the file.
    [info] = site.glob("oracle_plugin_hello_world-*.dist-info")
    assert "License-Expression: Apache-2.0" in (info / "METADATA").read_text()
    assert (info / "licenses" / "LICENSE").read_text() == (package / "LICENSE").read_text()


def test_the_name_with_or_without_its_distribution_prefix_gives_the_same_package(
    tmp_path: Path,
) -> None:
    runner = CliRunner()
    bare, prefixed = tmp_path / "bare", tmp_path / "prefixed"

    first = runner.invoke(main, ["plugin", "new", "foo", "--directory", str(bare)])
    second = runner.invoke(
        main, ["plugin", "new", "oracle-plugin-foo", "--directory", str(prefixed)]
    )

    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert (
        [p.name for p in bare.iterdir()]
        == [p.name for p in prefixed.iterdir()]
        == ["oracle-plugin-foo"]
    )
    assert tree(bare / "oracle-plugin-foo") == tree(prefixed / "oracle-plugin-foo")
    pyproject = tomllib.loads((bare / "oracle-plugin-foo/pyproject.toml").read_text())
    assert pyproject["project"]["name"] == "oracle-plugin-foo"
    assert pyproject["project"]["entry-points"]["oracle.plugins"] == {"foo": "oracle_plugin_foo"}


@pytest.mark.parametrize(
    ("license", "first_line"), [("Apache-2.0", "Apache License"), ("MIT", "MIT License")]
)
def test_the_license_file_matches_the_license_field(license: str, first_line: str) -> None:
    files = plugin_files("foo", license=license)

    project = tomllib.loads(files["pyproject.toml"])["project"]
    assert project["license"] == license  # the SPDX string form (PEP 639)
    assert project["license-files"] == ["LICENSE"]
    assert files["LICENSE"].lstrip().startswith(first_line)
    assert f"{license}; see `LICENSE`" in files["README.md"]


def test_the_apache_license_is_the_full_text() -> None:
    text = plugin_files("foo")["LICENSE"]

    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_gitignore_keeps_build_output_and_caches_out() -> None:
    ignored = plugin_files("foo")[".gitignore"].split()

    for pattern in ("__pycache__/", "*.egg-info/", "build/", "dist/", ".venv/", ".pytest_cache/"):
        assert pattern in ignored


def test_the_workflow_installs_lints_and_runs_the_tests_on_every_push() -> None:
    workflow = yaml.safe_load(plugin_files("foo")[".github/workflows/test.yml"])

    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert set(triggers) == {"push", "pull_request"}
    [job] = workflow["jobs"].values()
    runs = [step.get("run", "") for step in job["steps"]]
    assert "python -m pip install -e '.[test]' ruff" in runs
    assert any("ruff format --check ." in r and "ruff check ." in r for r in runs)
    assert "python -m pytest" in runs
    python = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert python["with"]["python-version"] == "${{ matrix.python-version }}"


@pytest.mark.slow  # runs ruff
def test_every_generated_file_passes_ruff_format_and_check(tmp_path: Path) -> None:
    names = ["a", "hello-world", "snake_case_name", "x" + "-y" * ((NAME_MAX - 1) // 2)]
    for index, name in enumerate(names):
        for visibility in ("on-demand", "always", "silent"):
            for license in ("Apache-2.0", "MIT"):
                root = tmp_path / f"{index}-{visibility}-{license}"
                for relative, text in plugin_files(name, visibility, license).items():
                    path = root / relative
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text, encoding="utf-8")
    ruff = [sys.executable, "-m", "ruff"]

    formatted = run([*ruff, "format", "--check", "--no-cache", "."], tmp_path)
    checked = run([*ruff, "check", "--no-cache", "."], tmp_path)

    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Bad Name", "not a valid plugin name"),
        ("oracle-plugin-", "not a valid plugin name"),
        ("oracle-plugin-Foo", "not a valid plugin name"),
        ("a" * (NAME_MAX + 1), f"within {NAME_MAX} characters"),
        ("taken", "already exists"),
        ("oracle-plugin-taken", "already exists"),
    ],
)
def test_bad_names_and_existing_folders_are_refused(
    tmp_path: Path, name: str, message: str
) -> None:
    (tmp_path / "oracle-plugin-taken").mkdir()

    result = CliRunner().invoke(main, ["plugin", "new", name, "--directory", str(tmp_path)])

    assert result.exit_code == 2
    assert message in result.output


ROOT = Path(__file__).resolve().parents[2]
GIT_URL = "git+https://example.com/team/oracle-core.git@v0.1.0"


def development_steps(readme: str) -> list[str]:
    block = readme.split("## Development", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return block.splitlines()


@pytest.mark.parametrize(
    ("core", "first"),
    [
        (str(ROOT), f"pip install -e {ROOT}  #"),
        (f"{ROOT}/", f"pip install -e {ROOT}  #"),
        (GIT_URL, f"pip install 'oracle-core-runtime @ {GIT_URL}'  #"),
        ("oracle-core-runtime", "pip install -e '.[test]' ruff"),
    ],
)
def test_the_readme_installs_the_core_first_from_where_core_says(
    tmp_path: Path, core: str, first: str
) -> None:
    result = CliRunner().invoke(
        main, ["plugin", "new", "foo", "--directory", str(tmp_path), "--core", core]
    )
    package = tmp_path / "oracle-plugin-foo"

    assert result.exit_code == 0, result.output
    steps = development_steps((package / "README.md").read_text())
    assert steps[0].startswith(first)
    assert steps[-3:] == [
        "pip install -e '.[test]' ruff",
        "pytest",
        "ruff format --check . && ruff check .",
    ]
    # The dependency stays publishable: the package index refuses direct references.
    dependencies = tomllib.loads((package / "pyproject.toml").read_text())["project"][
        "dependencies"
    ]
    assert dependencies[0] == "oracle-core-runtime"
    if first.startswith("pip install -e /"):
        assert f"pip install -e {ROOT}" in result.output  # "Next:" says it too


def test_without_core_the_readme_installs_the_checkout_this_oracle_runs_from(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(main, ["plugin", "new", "foo", "--directory", str(tmp_path)])

    steps = development_steps((tmp_path / "oracle-plugin-foo/README.md").read_text())
    assert result.exit_code == 0, result.output
    assert steps[0].startswith(f"pip install -e {ROOT}  #")  # this suite runs an editable checkout


def test_a_url_core_is_installed_first_by_the_workflow_and_a_path_is_not(tmp_path: Path) -> None:
    remote = yaml.safe_load(
        plugin_files("foo", core_install=f"'oracle-core-runtime @ {GIT_URL}'")[
            ".github/workflows/test.yml"
        ]
    )
    local = yaml.safe_load(
        plugin_files("foo", core_install=f"-e {ROOT}")[".github/workflows/test.yml"]
    )

    def install(workflow: dict[str, object]) -> str:
        [job] = workflow["jobs"].values()  # type: ignore[attr-defined]
        return next(s["run"] for s in job["steps"] if s.get("name") == "Install")

    assert install(remote).splitlines() == [
        f"python -m pip install 'oracle-core-runtime @ {GIT_URL}'",
        "python -m pip install -e '.[test]' ruff",
    ]
    assert (
        install(local) == "python -m pip install -e '.[test]' ruff"
    )  # a CI runner has no such path


def _not_a_checkout(root: Path, seed: int) -> Path:
    """One of a seeded class of folders and paths that are not a checkout of oracle-core."""
    kind = random.Random(seed).choice(["empty", "other", "broken", "nameless", "file", "missing"])
    place = root / f"{kind}-{seed}"
    if kind == "missing":
        return place
    if kind == "file":
        place.write_text("[project]\nname = 'oracle-core-runtime'\n")
        return place
    place.mkdir()
    text = {
        "empty": None,
        "other": "[project]\nname = 'oracle-core'\n",  # the unrelated project on the index
        "broken": "[project\nname = 'oracle-core-runtime'\n",
        "nameless": "[build-system]\nrequires = []\n",
    }[kind]
    if text is not None:
        (place / "pyproject.toml").write_text(text)
    return place


@pytest.mark.parametrize("seed", range(12))
def test_a_core_folder_that_is_not_a_checkout_is_refused_naming_the_fix(
    tmp_path: Path, seed: int
) -> None:
    core = _not_a_checkout(tmp_path, seed)

    result = CliRunner().invoke(
        main, ["plugin", "new", "foo", "--directory", str(tmp_path), "--core", str(core)]
    )

    assert result.exit_code == 2
    assert "is not a checkout of oracle-core" in result.output
    assert "git+https://" in result.output  # what to give instead
    assert not (tmp_path / "oracle-plugin-foo").exists()
