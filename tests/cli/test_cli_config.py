"""Settings that explain themselves: a malformed ``oracle.toml`` or a bad environment value
is one line naming the file, line, key and what fits, exit status 2, no traceback, for every
command; ``oracle config`` shows the resolved settings without secrets."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import assert_one_clean_line, run

from oracle_core.settings.reading import line_of

VALID = """\
[plugins.weather]
units = "metric"
api_key = { "$env" = "WEATHER_KEY" }

[plugins.notes]
folder = "~/notes"

[surface]
kind = "catalog"
"""


def malformed(seed: int) -> str:
    """A broken variant of :data:`VALID`: cut, doubled, junk inserted or a value retyped."""
    rng = random.Random(seed)
    lines = VALID.splitlines()
    kind = seed % 5
    if kind == 0:  # cut in the middle of a line
        at = rng.randrange(1, len(VALID) - 1)
        while VALID[at - 1] in "\n]" or VALID[at] == "\n":
            at = rng.randrange(1, len(VALID) - 1)
        return VALID[:at]
    if kind == 1:  # a key defined twice
        return VALID + 'units = "imperial"\n'.replace("units", "kind")
    if kind == 2:  # junk on a line
        index = rng.randrange(len(lines))
        lines[index] += rng.choice([" ]", " = =", ' "unclosed', " @@", "["])
        return "\n".join(lines) + "\n"
    if kind == 3:  # a table that is not one
        return rng.choice(
            ['plugins = "all"\n', "plugins = [1, 2]\n", "[plugins]\nweather = 3\n",
             "surface = 1\n", "[mcp]\nfiles = true\n", 'mcp = "x"\n', "approvals = 1\n",
             '[approvals]\ntools = "files.delete"\n']
        )  # fmt: skip
    return VALID.replace(
        "[plugins.notes]", rng.choice(["[plugins.notes", "[[plugins.notes]", "[]"])
    )


@pytest.mark.parametrize("seed", range(40))
def test_every_malformed_config_is_one_line_naming_the_file_and_exit_2(
    tmp_path: Path, seed: int
) -> None:
    text = malformed(seed)
    home = tmp_path / "home"
    home.mkdir()
    (home / "oracle.toml").write_text(text)

    code, _, err = run(home, "plugins")

    line = assert_one_clean_line(code, err)
    assert str(home / "oracle.toml") in line
    if ", line " in line:
        number = int(line.split(", line ")[1].split(",")[0].split(":")[0])
        assert 1 <= number <= text.count("\n") + 1


def test_a_syntax_error_names_its_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text('[plugins.weather]\nunits = "metric\n')

    code, _, err = run(tmp_path, "plugins")

    line = assert_one_clean_line(code, err)
    assert f"{tmp_path / 'oracle.toml'}, line 2, column" in line
    assert "not valid TOML" in line


def test_a_value_of_the_wrong_kind_names_the_key_its_line_and_what_fits(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text('[surface]\nkind = "catalog"\n\n[plugins]\nweather = 3\n')

    code, _, err = run(tmp_path, "config")

    line = assert_one_clean_line(code, err)
    assert line == (
        f"oracle: {tmp_path / 'oracle.toml'}, line 5: plugins.weather is an integer; "
        "expected a table ([plugins.weather])"
    )


def test_a_config_that_is_not_utf8_says_so(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_bytes(b'[plugins.x]\nname = "\xff\xfe"\n')

    code, _, err = run(tmp_path, "plugins")

    assert "is not UTF-8" in assert_one_clean_line(code, err)


BAD_VALUES = ["abc", "-1", "1.5x", "nan", "inf", "0x10", "1e999", "٣"]
NUMERIC = [
    "ORACLE_TIER1_BUDGET", "ORACLE_HOOK_TIMEOUT", "ORACLE_LIST_LIMIT", "ORACLE_MAX_STEPS",
    "ORACLE_TOOL_CONCURRENCY", "ORACLE_TOOL_TIMEOUT", "ORACLE_MAX_RESULT_BYTES",
    "ORACLE_MAX_TEXT_BYTES", "ORACLE_RUN_TIMEOUT", "ORACLE_SYNC_TOOL_WORKERS", "ORACLE_BUSY_WAIT",
]  # fmt: skip


@pytest.mark.parametrize("variable", NUMERIC)
def test_every_bad_number_in_the_environment_names_the_variable_and_what_fits(
    tmp_path: Path, variable: str
) -> None:
    rng = random.Random(variable)
    for value in [*BAD_VALUES, rng.choice(["--3", "3 4", "+-1", "1_0_", "."])]:
        code, _, err = run(tmp_path, "plugins", **{variable: value})
        if value == "٣" and code == 0:
            continue  # int("٣") is 3 (an Arabic-Indic digit): a number, valid where 3 fits
        line = assert_one_clean_line(code, err)
        assert line.startswith(f"oracle: {variable}=")
        assert "expected " in line


@pytest.mark.parametrize("variable", ["ORACLE_STRICT_PLUGINS", "ORACLE_TRACE_PLUGINS"])
@pytest.mark.parametrize("value", ["maybe", "2", "enable", "yes please"])
def test_a_switch_takes_only_on_or_off(tmp_path: Path, variable: str, value: str) -> None:
    code, _, err = run(tmp_path, "plugins", **{variable: value})

    line = assert_one_clean_line(code, err)
    assert f"{variable}={value!r}" in line
    assert "1 or 0" in line


def test_an_unknown_model_client_names_the_choices(tmp_path: Path) -> None:
    code, _, err = run(tmp_path, "ask", "hi", ORACLE_MODEL="openai/x", ORACLE_MODEL_CLIENT="sdk")

    line = assert_one_clean_line(code, err)
    assert "ORACLE_MODEL_CLIENT='sdk'" in line and "auto, litellm" in line


def test_line_of_finds_tables_and_dotted_keys() -> None:
    text = '[a]\nb = 1\n"c" = 2\n[a.d]\ne.f = 3\n'

    assert line_of(text, "a") == 1
    assert line_of(text, "a.b") == 2
    assert line_of(text, "a.c") == 3
    assert line_of(text, "a.d") == 4
    assert line_of(text, "a.d.e.f") == 5
    assert line_of(text, "nope") is None


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [["plugins"], ["ask", "hi"], ["chat"], ["prompt"], ["search", "weather"], ["config"],
     ["threads"], ["serve", "--port", "0"], ["demo"]],
)  # fmt: skip
def test_every_command_reports_a_malformed_config_the_same_way(
    tmp_path: Path, command: list[str]
) -> None:
    (tmp_path / "oracle.toml").write_text("[plugins.weather\n")
    env = {**os.environ, "ORACLE_HOME": str(tmp_path), "ORACLE_MODEL": "demo"}

    result = subprocess.run(
        [sys.executable, "-m", "oracle_core", *command],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip

    line = assert_one_clean_line(result.returncode, result.stderr)
    assert f"{tmp_path / 'oracle.toml'}, line 1, column 17: not valid TOML" in line


def test_config_shows_the_resolved_settings_without_secrets(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text('[plugins.weather]\napi_key = "toml-secret"\n')
    secrets = {
        "ORACLE_API_KEY": "sk-very-secret",
        "OPENAI_API_KEY": "sk-openai-secret",
        "ORACLE_DATABASE_URL": "postgresql://me:db-secret@127.0.0.1:5432/test",
    }

    code, text, _ = run(tmp_path, "config", ORACLE_MODEL="openai/gpt-4o-mini", **secrets)
    _, raw, _ = run(tmp_path, "config", "--json", ORACLE_MODEL="openai/gpt-4o-mini", **secrets)

    data = json.loads(raw)
    assert code == 0
    for secret in ("sk-very-secret", "sk-openai-secret", "db-secret", "toml-secret"):
        assert secret not in text and secret not in raw
    assert data["model"] == "openai/gpt-4o-mini"
    assert data["home"] == str(tmp_path)
    assert data["store"] == {"kind": "postgres", "url": "postgresql://me:***@127.0.0.1:5432/test"}
    assert data["api_key"].startswith("set (ORACLE_API_KEY")
    assert data["plugin_config_sections"] == ["weather"]
    assert data["plugins"]["load_plugins"] == []
    assert "model:         openai/gpt-4o-mini" in text


def test_config_says_when_no_model_is_configured(tmp_path: Path) -> None:
    code, text, _ = run(tmp_path, "config")

    assert code == 0
    assert "model:         none configured (set ORACLE_MODEL or --model)" in text
    assert f"store:         sqlite {tmp_path / 'oracle.db'}" in text
