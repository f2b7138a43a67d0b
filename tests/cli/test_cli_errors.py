"""Errors that point at the line, extras that say what to install, and the plugins table
with per-tool tiers and routes; each as an `oracle` subprocess sees it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import SitePackages, plugin_code

pytestmark = pytest.mark.slow  # runs `oracle` subprocesses

BLOCKER = '''
import os, sys

class _Blocker:
    """Makes the modules named in ORACLE_TEST_BLOCK look not installed."""

    def __init__(self, names):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Blocker(set(os.environ.get("ORACLE_TEST_BLOCK", "").split(","))))
'''


def run_oracle(site: SitePackages, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "PYTHONPATH": str(site.root),
        "ORACLE_HOME": str(site.root / "home"),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "oracle_core", *args],
        env=environ, capture_output=True, text=True, timeout=120, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def add_package(site: SitePackages, name: str, files: dict[str, str]) -> Path:
    """A plugin that is a package folder ``name`` (entry point ``name``), with ``files``."""
    folder = site.root / name
    folder.mkdir()
    for file, code in files.items():
        (folder / file).write_text(textwrap.dedent(code))
    info = site.root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: oracle-plugin-{name}\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(f"[oracle.plugins]\n{name} = {name}\n")
    return folder


def test_an_import_error_names_the_file_and_line_in_the_plugin(site: SitePackages) -> None:
    folder = add_package(
        site,
        "broken",
        {
            "__init__.py": "from broken.settings import LIMIT\n",
            "settings.py": """\
                import json

                def read():
                    return json.loads("{not json")

                LIMIT = read()
            """,
        },
    )

    result = run_oracle(site, "plugins", ORACLE_LOAD_PLUGINS="broken")

    assert result.returncode == 0, result.stderr
    where = f"{(folder / 'settings.py').resolve()}, line 4"
    assert f"import of 'broken' failed at {where}: JSONDecodeError" in result.stdout
    assert result.stdout.count("import of 'broken' failed") == 1  # reported once
    assert "No plugins installed" not in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_a_syntax_error_names_its_file_and_line(site: SitePackages) -> None:
    folder = add_package(site, "typo", {"__init__.py": "x = 1\n\ndef broken(:\n    pass\n"})

    result = run_oracle(site, "plugins", ORACLE_LOAD_PLUGINS="typo")

    assert f"failed at {(folder / '__init__.py').resolve()}, line 3: SyntaxError" in result.stdout


def test_trace_plugins_prints_the_whole_traceback(site: SitePackages) -> None:
    add_package(site, "broken", {"__init__.py": "def f():\n    raise KeyError('missing')\n\nf()\n"})

    result = run_oracle(site, "plugins", ORACLE_LOAD_PLUGINS="broken", ORACLE_TRACE_PLUGINS="1")

    assert "oracle: import of plugin broken failed:\nTraceback (most recent call last):" in (
        result.stderr
    )
    assert "line 2, in f\n    raise KeyError(" in result.stderr
    assert result.stdout.count("import of 'broken' failed") == 1


def test_with_only_failures_it_does_not_say_no_plugins_are_installed(site: SitePackages) -> None:
    site.add("oracle-plugin-bad", "raise RuntimeError('no')\n", entry_point="bad")

    result = run_oracle(site, "plugins", ORACLE_LOAD_PLUGINS="bad")

    assert "No plugins installed" not in result.stdout
    assert "Failed to load (1):" in result.stdout


def test_the_table_shows_tool_tier_overrides_and_routes(site: SitePackages) -> None:
    site.add(
        "oracle-plugin-mixed",
        """
        from oracle_core import PluginManifest, Route, hookimpl, tool

        @tool
        def plain(text: str) -> str:
            \"\"\"A tool with the plugin's tier.\"\"\"
            return text

        @tool(visibility="always")
        def loud(text: str) -> str:
            \"\"\"A tool that is always shown.\"\"\"
            return text

        async def status(request):
            return {"ok": True}

        @hookimpl
        def oracle_manifest():
            return PluginManifest(name="mixed", summary="Mixed.", when_to_use=["tests"])

        @hookimpl
        def oracle_tools():
            return [plain, loud]

        @hookimpl
        def oracle_routes():
            return [Route("/status", status)]
        """,
        entry_point="mixed",
    )
    site.add("oracle-plugin-quiet", plugin_code("quiet"), entry_point="quiet")

    result = run_oracle(site, "plugins", ORACLE_LOAD_PLUGINS="mixed,quiet")

    lines = result.stdout.splitlines()
    assert lines[0].split() == ["PLUGIN", "DISTRIBUTION", "VERSION", "TIER", "TOOLS", "ROUTES"]
    mixed = next(line for line in lines if line.startswith("mixed"))
    quiet = next(line for line in lines if line.startswith("quiet"))
    assert "plain, loud (always)" in mixed
    assert mixed.rstrip().endswith("/status")
    assert quiet.split()[-2:] == ["quiet_ping", "-"]
    assert "(routes are served under /plugins/<plugin> by `oracle serve`)" in result.stdout


@pytest.mark.parametrize(
    ("command", "blocked", "extra", "env"),
    [
        (["serve", "--port", "0"], "fastapi", "server", {}),
        (["serve", "--port", "0"], "uvicorn", "server", {}),
        (["threads"], "psycopg", "postgres", {"ORACLE_DATABASE_URL": "postgresql://u@127.0.0.1/test"}),
        (["mcp"], "mcp", "mcp", {}),
    ],
)  # fmt: skip
def test_a_missing_extra_is_one_line_naming_it(
    site: SitePackages, command: list[str], blocked: str, extra: str, env: dict[str, str]
) -> None:
    (site.root / "sitecustomize.py").write_text(BLOCKER)

    result = run_oracle(site, *command, ORACLE_LOAD_PLUGINS="", ORACLE_TEST_BLOCK=blocked, **env)

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"oracle: oracle {command[0]} needs the {extra!r} extra ({blocked} is not installed): "
        f"pip install 'oracle-core-runtime[{extra}]'"
    ]
