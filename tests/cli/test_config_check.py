"""One check of the whole configuration, used by every command: a bad table anywhere in
``oracle.toml`` (``[budgets]``, ``[approvals]``, ``[surface]``, read late or not) stops every
command in one line naming the file, line, key and fix, exit 2; ``oracle serve`` never starts
without a model or on a store that does not answer; ``oracle config --check`` reports all."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from cli_support import assert_one_clean_line as one_line
from cli_support import run
from click.testing import CliRunner

from oracle_core import ConfigError, Settings
from oracle_core.cli import main

BAD_TABLES = [
    # (table as written, the key the message names, words of the fix)
    ("[budgets]\nuser_week_tokens = 5000\n", "user_week_tokens", "did you mean user_day_tokens?"),
    ("[budgets]\nuser_day_tokens = -5\n", "budgets.user_day_tokens", "a number at least 0"),
    ('[budgets]\nthread_month_cost = "1"\n', "budgets.thread_month_cost", "a number at least 0"),
    ("[budgets]\nhold_seconds = 0\n", "budgets.hold_seconds", "above 0"),
    ('[approvals]\ntool = ["files.delete"]\n', "'tool'", "did you mean tools?"),
    ("[approvals]\ndeadline = -5\n", "deadline", "a number of seconds (0 for none)"),
    ('[approvals]\ntools = "files.delete"\n', "tools", 'tools = ["files.delete"]'),
    ("[approvals]\ntools = [1]\n", "tools", "a list of tool names"),
    ('[approvals]\ndeadline = "soon"\n', "deadline", "a number of seconds"),
    ('[surface]\nkidn = "catalog"\n', "'kidn'", "did you mean kind?"),
    ('[surface]\nkind = "specialst"\n', "specialst", 'use kind = "catalog" or kind = "specialist"'),
    ('[surface]\ntools = ["a.b"]\nkind = "catalog"\n', "tool list", "remove tools"),
    ("[sync_tools]\nshares = 2\n", "'shares'", "did you mean share?"),
    ("[sync_tools]\nshare = 0\n", "sync_tools.share", "at least 1"),
    ('[aliases]\n"a/b" = "openai/x"\n', "aliases.a/b", "without '/'"),
    ("[models.fast]\ntimeout = -1\n", "timeout", ""),
    ("[budget]\nuser_day_tokens = 5\n", "[budget]", "rename it to [budgets]"),
    ("[server]\nport = 9000\n", "[server]", "remove it"),
]  # fmt: skip

COMMANDS = [
    ["config"], ["plugins"], ["prompt"], ["usage"], ["search", "weather"], ["threads"],
    ["ask", "hi"], ["chat"], ["serve", "--port", "0"], ["logs"], ["models"], ["operations"],
]  # fmt: skip


@pytest.mark.parametrize("seed", range(len(BAD_TABLES) * 2))
def test_every_command_refuses_a_bad_table_in_one_line_naming_file_line_key_and_fix(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    table, key, fix = BAD_TABLES[seed % len(BAD_TABLES)]
    command = rng.choice(COMMANDS)
    padding = "\n" * rng.randrange(3)  # the bad table is not always on the first lines
    text = f"[plugins.weather]\ntimeout = 5\n{padding}{table}"
    (tmp_path / "oracle.toml").write_text(text)

    line = one_line(*run(tmp_path, *command, ORACLE_MODEL="demo")[::2])

    config = tmp_path / "oracle.toml"
    assert str(config) in line, (command, line)
    bad_line = text.count("\n", 0, text.index(table)) + 2  # the key's line, under the header
    if "[" in key:  # an unknown table is named at its header
        bad_line -= 1
    assert f", line {bad_line}" in line, (command, line)
    assert key in line and fix in line, (command, line)


def test_a_bad_table_read_only_by_the_server_stops_serve_before_it_starts(tmp_path: Path) -> None:
    # The example: [budgets] and [approvals] were read in the server's start-up hook
    # only, so `oracle serve` printed an 80-line traceback and exited 3.
    (tmp_path / "oracle.toml").write_text("[budgets]\nuser_week_tokens = 5000\n")

    code, out, err = run(tmp_path, "serve", "--port", "0", ORACLE_MODEL="demo")

    assert "line 2: [budgets] has unknown key 'user_week_tokens'" in one_line(code, err)
    assert "serving" not in out + err


@pytest.mark.parametrize("command", [["ask", "hi"], ["prompt"], ["search", "x"]])
def test_a_surface_typo_is_a_configuration_error_exit_2(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "oracle.toml").write_text(
        '[surface]\nkind = "specialist"\ntools = ["nosuch.tool"]\n'
    )

    code, _, err = run(tmp_path, *command, ORACLE_MODEL="demo")

    assert code == 2, err  # was 1, unlike every other configuration error
    assert "[surface] in" in err and "nosuch" in err


def test_serve_without_a_model_refuses_to_start_saying_how_to_set_one(tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "ORACLE_MODEL"}
    result = CliRunner().invoke(
        main, ["serve", "--port", "0"], env={**environ, "ORACLE_HOME": str(tmp_path)}
    )

    line = one_line(result.exit_code, result.stderr)
    assert "ORACLE_MODEL" in line and "--model" in line and "--model demo" in line
    assert "serving" not in result.output


UNUSABLE_DATABASES = [
    "postgresql://someone:hunter2@127.0.0.1:1/x",  # nothing listens
    "postgresql://someone:hunter2@127.0.0.1:5432/no_such_database_here",  # no such database
    "postgresql://no_such_role_here:hunter2@127.0.0.1:5432/test",  # no such role
    "postgresql://someone:hunter2@127.0.0.1:99999/x",  # a port that is none
]


@pytest.mark.parametrize("url", UNUSABLE_DATABASES)
def test_serve_never_starts_on_a_postgres_it_cannot_open(tmp_path: Path, url: str) -> None:
    pytest.importorskip("psycopg")

    code, out, err = run(
        tmp_path, "serve", "--port", "0", ORACLE_MODEL="demo", ORACLE_DATABASE_URL=url
    )

    line = one_line(code, err)
    assert line.startswith("oracle: ORACLE_DATABASE_URL: cannot connect to Postgres")
    assert "hunter2" not in line
    assert "serving" not in out


@pytest.mark.parametrize("content", [b"not a database\n", b"SQLite format 3\x00" + b"\xee" * 100])
def test_serve_never_starts_on_a_sqlite_file_it_cannot_read(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "oracle.db").write_bytes(content)

    code, out, err = run(tmp_path, "serve", "--port", "0", ORACLE_MODEL="demo")

    line = one_line(code, err)
    assert "ORACLE_HOME: the database" in line and "cannot be read" in line
    assert "serving" not in out


def test_serve_never_starts_in_an_oracle_home_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")

    code, _, err = run(tmp_path / "file" / "home", "serve", "--port", "0", ORACLE_MODEL="demo")

    assert "set ORACLE_HOME to a folder" in one_line(code, err)


RELATIVE_HOMES = ["home", "./home", "a/../home", "a/b/home", "home/", "./a/./b"]


@pytest.mark.parametrize("given", RELATIVE_HOMES)
def test_a_relative_oracle_home_is_made_absolute_once_where_settings_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({"ORACLE_HOME": given})
    monkeypatch.chdir(Path(tmp_path.anchor))  # a server or a plugin changing folder later

    assert settings.home.is_absolute()
    assert settings.home == Path(os.path.normpath(tmp_path / given))
    assert settings.database_path == settings.home / "oracle.db"


def test_oracle_config_shows_a_relative_home_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    code, out, _ = run(Path("rel"), "config", "--json")

    assert code == 0
    assert json.loads(out)["home"] == str(tmp_path / "rel")


NOT_SERVER_URLS = [
    "localhost:8080", "127.0.0.1", "ftp://example.com", "http://", "http://host:port/v1",
    "htp://localhost:8080", "//localhost:8080/v1", "localhost:8080/v1",
]  # fmt: skip


@pytest.mark.parametrize("url", NOT_SERVER_URLS)
def test_a_model_server_url_without_its_scheme_is_refused_naming_the_setting(
    tmp_path: Path, url: str
) -> None:
    # It failed every model call with no more than "APIConnectionError: Connection error."
    code, _, err = run(tmp_path, "ask", "hi", ORACLE_MODEL="openai/x", ORACLE_API_BASE=url)

    line = one_line(code, err)
    assert "ORACLE_API_BASE or --api-base" in line and "http://localhost:8080/v1" in line


@pytest.mark.parametrize(
    "url", ["http://localhost:8080/v1", "https://api.example.com", " http://h:1 "]
)
def test_a_model_server_url_with_its_scheme_is_accepted(url: str) -> None:
    assert Settings.from_env({"ORACLE_API_BASE": url}).api_base == url.strip()


@pytest.mark.parametrize("url", ["collector:4318", "udp://x:1", "http://", "http://h:nope"])
@pytest.mark.parametrize(
    "variable",
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
     "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"],
)  # fmt: skip
def test_an_otlp_endpoint_that_is_no_url_stops_a_command(
    tmp_path: Path, variable: str, url: str
) -> None:
    code, _, err = run(tmp_path, "threads", **{variable: url, "OTEL_TRACES_EXPORTER": "none"})

    line = one_line(code, err)
    assert line.startswith(f"oracle: {variable}=") and "http://localhost:4318" in line


def check(home: Path, **env: str) -> tuple[int, list[dict[str, str]]]:
    code, out, err = run(home, "config", "--check", "--json", **env)
    assert "Traceback" not in err
    return code, json.loads(out)


def levels(findings: list[dict[str, str]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in findings:
        found.setdefault(finding["level"], []).append(f"{finding['subject']}: {finding['message']}")
    return found


def test_config_check_passes_a_good_configuration_naming_each_part(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text("[budgets]\nuser_day_tokens = 1000\n")

    code, findings = check(tmp_path, ORACLE_MODEL="openai/gpt-4o-mini")

    said = levels(findings)
    assert code == 0, findings
    assert "error" not in said and "warning" not in said, said
    assert [f["subject"] for f in findings] == ["oracle.toml", "store", "model", "plugins"]
    assert f"store: sqlite {tmp_path / 'oracle.db'} answers" in said["ok"]


def test_config_check_lists_every_bad_table_at_once_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text(
        "[budgets]\nuser_week_tokens = 5000\n[approvals]\ntool = []\n[surface]\nkidn = 1\n"
    )

    code, findings = check(tmp_path, ORACLE_MODEL="demo")

    errors = levels(findings)["error"]
    assert code == 2
    assert len([e for e in errors if e.startswith("oracle.toml")]) == 3, errors
    assert any("line 2: [budgets] has unknown key 'user_week_tokens'" in e for e in errors)
    assert any("line 4: [approvals] has unknown key 'tool'" in e for e in errors)
    assert any("line 6: unknown key(s) 'kidn'" in e for e in errors)


def test_config_check_reports_a_store_that_does_not_answer(tmp_path: Path) -> None:
    (tmp_path / "oracle.db").write_bytes(b"not a database\n")

    code, findings = check(tmp_path, ORACLE_MODEL="demo")

    assert code == 2
    assert any(e.startswith("store: ORACLE_HOME: the database") for e in levels(findings)["error"])


def test_config_check_warns_of_what_commands_go_on_without(tmp_path: Path) -> None:
    environ = {"ORACLE_MODLE": "openai/x", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    (tmp_path / "oracle.toml").write_text("[plugins.nosuch]\nkey = 1\n")

    code, findings = check(tmp_path, **environ)

    warnings = levels(findings)["warning"]
    assert code == 0, findings  # no model, a typo'd variable, a collector down: warnings
    assert any(w.startswith("model: no model is configured") for w in warnings), warnings
    assert any("ORACLE_MODLE is ignored" in w and "ORACLE_MODEL" in w for w in warnings)
    assert any("nothing answers at 127.0.0.1:9" in w for w in warnings), warnings
    assert any("[plugins.nosuch] configures a plugin that is not installed" in w for w in warnings)


def test_config_check_prints_one_line_a_finding(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text("[approvals]\ndeadline = -5\n")

    code, out, _ = run(tmp_path, "config", "--check", ORACLE_MODEL="demo")

    assert code == 2
    lines = out.splitlines()
    assert lines[0].startswith("error    oracle.toml: ") and "line 2" in lines[0]
    assert all(line.split(" ", 1)[0] in ("ok", "warning", "error") for line in lines), out


def test_a_bad_table_is_refused_by_an_oracle_built_in_code(tmp_path: Path) -> None:
    from oracle_core import Oracle

    (tmp_path / "oracle.toml").write_text("[approvals]\ntool = []\n")

    with pytest.raises(ConfigError, match=r"line 2: \[approvals\] has unknown key 'tool'"):
        Oracle(entry_points=False, settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}))


def test_config_check_names_every_bad_variable_at_once(tmp_path: Path) -> None:
    bad = {
        "ORACLE_HOOK_TIMEOUT": "soon",
        "ORACLE_MAX_STEPS": "0",
        "ORACLE_API_BASE": "localhost:8080",
    }

    code, findings = check(tmp_path, ORACLE_MODEL="demo", **bad)

    errors = levels(findings)["error"]
    assert code == 2
    assert len(errors) == 3, errors
    assert errors[0].startswith("environment: ORACLE_HOOK_TIMEOUT='soon' in the environment")
    assert errors[1].startswith("environment: ORACLE_API_BASE or --api-base = 'localhost:8080'")
    assert errors[2].startswith("environment: ORACLE_MAX_STEPS='0' in the environment")


def test_config_check_names_one_bad_variable_as_every_command_does(tmp_path: Path) -> None:
    code, findings = check(tmp_path, ORACLE_MODEL="demo", ORACLE_LIST_LIMIT="0")
    _, _, err = run(tmp_path, "threads", ORACLE_LIST_LIMIT="0")

    assert code == 2
    assert [f"{f['level']} {f['message']}" for f in findings] == [
        f"error {one_line(2, err).removeprefix('oracle: ')}"
    ]
