"""Names in ``oracle.toml`` and the environment that nothing reads are reported, not
silently ignored: an unknown table or key of ``oracle.toml`` is an error naming the file, its
line and the closest known name; a ``[plugins.<name>]`` of a plugin that is not installed and
an ``ORACLE_*`` variable nothing reads are warnings; a value that cannot be right
(``ORACLE_MODEL_CLIENT=bogus``) is an error. Every real name is accepted without a word."""

from __future__ import annotations

import logging
import os
import random
import string
import subprocess
import sys
from pathlib import Path

import pytest

from oracle_core import Oracle
from oracle_core.errors import ConfigError
from oracle_core.settings import MODEL_CLIENTS, Settings
from oracle_core.settings.reading import TABLES, TABLES_OF_TABLES

REAL = """\
[plugins.weather]
units = "metric"

[mcp.files]
command = "true"
enabled = false

[surface]
kind = "catalog"

[approvals]
tools = ["weather.forecast"]
deadline = 30

[sync_tools]
share = 2

[sync_tools.plugins]
weather = 1
"""
"""A configuration that uses every table and core-read key: it must load silently."""

TABLE_NAMES = (*TABLES_OF_TABLES, *TABLES)


def warnings_for(tmp_path: Path, text: str, caplog: pytest.LogCaptureFixture) -> str:
    (tmp_path / "oracle.toml").write_text(text)
    caplog.clear()
    with caplog.at_level(logging.WARNING, "oracle_core"):
        Settings.from_env({"ORACLE_HOME": str(tmp_path)}).check_config()
    return "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)


def refusal_of(tmp_path: Path, text: str) -> str:
    """What the check of ``oracle.toml`` holding ``text`` refuses it with (one line)."""
    (tmp_path / "oracle.toml").write_text(text)
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"ORACLE_HOME": str(tmp_path)}).check_config()
    said = str(refused.value)
    assert "\n" not in said
    return said


def near_miss(rng: random.Random, name: str) -> str:
    """``name`` with one letter dropped, doubled, swapped or replaced (never ``name`` itself)."""
    while True:
        at = rng.randrange(len(name))
        kind = rng.randrange(4)
        if kind == 0 and len(name) > 3:
            out = name[:at] + name[at + 1 :]
        elif kind == 1:
            out = name[:at] + name[at] + name[at:]
        elif kind == 2 and at + 1 < len(name):
            out = name[:at] + name[at + 1] + name[at] + name[at + 2 :]
        else:
            out = name[:at] + rng.choice(string.ascii_lowercase) + name[at + 1 :]
        if out != name and out.strip("_") and out[0] != "_":
            return out


def junk(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 12)))


def test_a_configuration_of_real_names_loads_silently(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert warnings_for(tmp_path, REAL, caplog) == ""


@pytest.mark.parametrize("seed", range(40))
def test_an_unknown_table_is_refused_with_its_line_and_the_closest_table(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    real = rng.choice(TABLE_NAMES)
    name = near_miss(rng, real) if seed % 2 else junk(rng)
    if name in TABLE_NAMES:
        pytest.skip("the mutation landed on another real table")
    header = f"[{name}.weather]" if real in TABLES_OF_TABLES else f"[{name}]"
    said = refusal_of(tmp_path, REAL + f"\n{header}\nport = 9000\n")
    line = REAL.count("\n") + 2
    assert f"oracle.toml, line {line}: unknown table {header}" in said, said
    if real in TABLES:  # a table of its own: its key is named too
        assert f"{header} with its key port: oracle reads no such table" in said, said
    if seed % 2 and len(real) > 4:  # a near miss of a long name: the real one is suggested
        assert f"rename it to [{real}" in said, said
    else:
        assert "rename it to" in said or "remove it" in said, said


@pytest.mark.parametrize("seed", range(20))
def test_an_unknown_sync_tools_key_is_refused_with_the_closest_key(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    key = near_miss(rng, "share") if seed % 2 else junk(rng)
    if key in ("share", "plugins"):
        pytest.skip("the mutation landed on a real key")
    text = REAL.replace("share = 2", f"share = 2\n{key} = 3")
    said = refusal_of(tmp_path, text)
    assert f"[sync_tools] has unknown key {key!r}" in said, said
    assert "oracle.toml, line 17" in said, said
    if seed % 2 and len(key) > 3:
        assert "did you mean share?" in said, said


def test_the_examples_of_the_issue_are_each_named(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text("[plugin.weather]\nunits = 1\n[server]\nport = 9000\n")

    said = [str(p) for p in Settings.from_env({"ORACLE_HOME": str(tmp_path)}).config_problems()]

    assert len(said) == 2, said
    assert "line 1: unknown table [plugin.weather]" in said[0]
    assert "rename it to [plugins.weather]" in said[0]
    assert "line 3: unknown table [server] with its key port" in said[1]
    assert "remove it" in said[1]


@pytest.mark.parametrize("seed", range(12))
def test_a_plugin_table_of_no_installed_plugin_is_a_warning_with_the_closest_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, seed: int
) -> None:
    rng = random.Random(seed)
    name = near_miss(rng, "weather") if seed % 2 else junk(rng)
    (tmp_path / "oracle.toml").write_text(f"[plugins.{name}]\nunits = 1\n")
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path)})
    with caplog.at_level(logging.WARNING, "oracle_core"):
        said = "\n".join(settings.warn_unknown_plugins({"weather", "clock"}))
    assert f"line 1: [plugins.{name}] configures a plugin that is not installed" in said
    if seed % 2:
        assert "did you mean [plugins.weather]?" in said
    assert said in caplog.text


def test_a_plugin_table_of_an_installed_plugin_is_silent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "oracle.toml").write_text("[plugins.weather]\nunits = 1\n")
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path)})
    assert settings.warn_unknown_plugins({"weather"}) == []


def test_building_an_oracle_warns_about_a_plugin_that_is_not_installed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "oracle.toml").write_text("[plugins.nosuch]\nkey = 1\n")
    env = {"ORACLE_HOME": str(tmp_path), "ORACLE_LOAD_PLUGINS": ""}
    with caplog.at_level(logging.WARNING, "oracle_core"):
        Oracle(settings=Settings.from_env(env), model="demo")
    assert "[plugins.nosuch] configures a plugin that is not installed" in caplog.text


def test_an_oracle_without_installed_plugins_does_not_judge_plugin_tables(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "oracle.toml").write_text("[plugins.nosuch]\nkey = 1\n")
    env = {"ORACLE_HOME": str(tmp_path)}
    with caplog.at_level(logging.WARNING, "oracle_core"):
        Oracle(entry_points=False, settings=Settings.from_env(env), model="demo")
    assert "nosuch" not in caplog.text


@pytest.mark.parametrize("seed", range(12))
def test_a_bad_model_client_is_an_error_naming_the_variable_and_the_choices(seed: int) -> None:
    rng = random.Random(seed)
    value = near_miss(rng, rng.choice(MODEL_CLIENTS)) if seed % 2 else junk(rng)
    if value in MODEL_CLIENTS:
        pytest.skip("the mutation landed on a real value")
    with pytest.raises(ConfigError, match=f"ORACLE_MODEL_CLIENT={value!r}.*auto, litellm"):
        Settings.from_env({"ORACLE_MODEL_CLIENT": value})


@pytest.mark.parametrize("value", ["", "auto", "litellm", "LiteLLM", " auto "])
def test_every_real_model_client_is_accepted(value: str) -> None:
    Settings.from_env({"ORACLE_MODEL_CLIENT": value})


def test_the_model_clients_are_the_ones_the_model_path_takes() -> None:
    from oracle_core.models.openai import MODEL_CLIENTS as TAKEN

    assert MODEL_CLIENTS == TAKEN


def test_the_cli_refuses_an_unknown_table_and_a_bad_model_client(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text("[server]\nport = 9000\n")
    env = {**os.environ, "ORACLE_HOME": str(tmp_path), "ORACLE_LOAD_PLUGINS": ""}
    env.pop("ORACLE_MODEL_CLIENT", None)
    oracle = [sys.executable, "-c", "from oracle_core.cli import main; main()"]
    shown = subprocess.run([*oracle, "config"], env=env, capture_output=True, text=True)
    assert shown.returncode == 2, shown.stderr
    assert shown.stderr.startswith("oracle: ")
    assert "oracle.toml, line 1: unknown table [server] with its key port" in shown.stderr
    assert "Traceback" not in shown.stderr
    (tmp_path / "oracle.toml").unlink()
    env["ORACLE_MODEL_CLIENT"] = "bogus"
    refused = subprocess.run([*oracle, "threads"], env=env, capture_output=True, text=True)
    assert refused.returncode == 2
    assert refused.stderr.startswith("oracle: ORACLE_MODEL_CLIENT='bogus'")
    assert "Traceback" not in refused.stderr
