"""``oracle demo``: the offline stand-in model walks the discovery loop and shows each step."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from support import SitePackages

pytestmark = pytest.mark.slow  # runs subprocesses: `pytest -m 'not slow'` skips it

EXAMPLE_PLUGIN = '''
from oracle_core import Example, PluginManifest, hookimpl, tool

@tool
def shout(text: str) -> str:
    """Repeat the text in capitals."""
    return text.upper()

@hookimpl
def oracle_manifest():
    return PluginManifest(
        name="megaphone",
        summary="Shout text loudly in capitals.",
        when_to_use=["the user wants text shouted"],
        examples=[Example(user="Shout hello loudly", tool="shout", args={"text": "hello"})],
    )

@hookimpl
def oracle_tools():
    return [shout]
'''


def test_demo_runs_offline_and_prints_every_step(site: SitePackages) -> None:
    site.add("oracle-plugin-megaphone", EXAMPLE_PLUGIN, entry_point="megaphone")
    env = {k: v for k, v in os.environ.items() if k not in ("ORACLE_MODEL", "ORACLE_API_BASE")}
    env.update(
        PYTHONPATH=str(site.root),
        ORACLE_HOME=str(site.root / "home"),
        ORACLE_LOAD_PLUGINS="megaphone",
    )

    result = subprocess.run(
        [sys.executable, "-m", "oracle_core", "demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "the built-in scripted stand-in" in out
    assert "user: Shout hello loudly" in out
    steps = [
        "model call 1: shown 3 tools (list_capabilities, load_capability, search_capabilities)",
        "→ list_capabilities({})",
        '→ load_capability({"names": ["megaphone"]})',
        "⊕ loaded megaphone",
        "model call 3: shown 4 tools (list_capabilities, load_capability, search_capabilities, shout)",
        '→ shout({"text": "hello"})',
        "← HELLO",
        "answer: shout returned: HELLO",
    ]
    positions = [out.index(step) for step in steps]
    assert positions == sorted(positions)
    assert re.search(
        r"prompt, by the oracle's count \(o200k_base\): \d+ tokens = Tier-1 0 \+ meta-tools \d+ "
        r"\+ tool schemas 0",
        out,
    )
    # The stand-in reports no usage: its figures say they are the oracle's own estimate.
    assert re.search(
        r"usage: ~\d+ prompt \+ \d+ completion, estimated \(the model reported none", out
    )
    assert "provider usage" not in out


def test_demo_without_plugins_says_what_to_install(site: SitePackages) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ORACLE_MODEL"}
    env.update(ORACLE_HOME=str(site.root / "home"), ORACLE_LOAD_PLUGINS="")

    result = subprocess.run(
        [sys.executable, "-m", "oracle_core", "demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0
    assert "No on-demand plugin with an example is installed" in result.stdout
