"""``oracle keys``: keys stored by name in ``$ORACLE_HOME/keys.json`` with mode 0600, their
values shown only by ``get``, and used by a model call when no key is set in the environment."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from click.testing import CliRunner

from oracle_core.assembly import choose_model
from oracle_core.cli import main
from oracle_core.settings import Settings
from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.values.messages import ModelRequest

SECRET = "sk-stored-0123456789"


def keys(home: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """``oracle keys ARGS`` in process: (exit code, stdout, stderr)."""
    environ = {"ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": ""}
    result = CliRunner().invoke(main, ["keys", *args], env=environ, input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_set_list_get_remove_round_trip(tmp_path: Path) -> None:
    assert keys(tmp_path, "set", "openai", "--value", SECRET)[0] == 0
    assert keys(tmp_path, "set", "anthropic", "--value", "sk-ant")[0] == 0

    assert keys(tmp_path, "list")[1] == "anthropic\nopenai\n"
    assert keys(tmp_path, "get", "openai")[1] == f"{SECRET}\n"
    assert keys(tmp_path, "remove", "openai")[0] == 0
    assert keys(tmp_path, "list")[1] == "anthropic\n"
    code, _, err = keys(tmp_path, "get", "openai")
    assert code == 1
    assert "no key named 'openai'" in err


def test_the_key_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    keys(tmp_path, "set", "openai", "--value", SECRET)

    path = Path(keys(tmp_path, "path")[1].strip())
    assert path == tmp_path / "keys.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(path.read_text()) == {"openai": SECRET}
    assert [p.name for p in tmp_path.iterdir()] == ["keys.json"]  # no temporary file left


def test_a_replaced_key_keeps_the_file_private(tmp_path: Path) -> None:
    keys(tmp_path, "set", "openai", "--value", "old")
    os.chmod(tmp_path / "keys.json", 0o644)  # loosened by hand: the next write tightens it

    keys(tmp_path, "set", "openai", "--value", "new")

    assert stat.S_IMODE(os.stat(tmp_path / "keys.json").st_mode) == 0o600
    assert keys(tmp_path, "get", "openai")[1] == "new\n"


def test_a_piped_value_is_read_from_stdin(tmp_path: Path) -> None:
    code, out, _ = keys(tmp_path, "set", "openai", stdin=f"{SECRET}\n")

    assert code == 0
    assert SECRET not in out
    assert keys(tmp_path, "get", "openai")[1] == f"{SECRET}\n"


@pytest.mark.slow
def test_on_a_terminal_the_value_is_typed_at_a_hidden_prompt(tmp_path: Path) -> None:
    env = {**os.environ, "ORACLE_HOME": str(tmp_path), "ORACLE_LOAD_PLUGINS": ""}
    child = pexpect.spawn(
        sys.executable, ["-m", "oracle_core", "keys", "set", "openai"],
        env=env, encoding="utf-8", timeout=60,
    )  # fmt: skip
    try:
        child.expect("Enter key: ")
        child.sendline(SECRET)
        child.expect(pexpect.EOF)
        shown = child.before or ""
    finally:
        child.close()

    assert child.exitstatus == 0
    assert SECRET not in shown  # not echoed
    assert keys(tmp_path, "get", "openai")[1] == f"{SECRET}\n"


def test_an_empty_value_is_refused(tmp_path: Path) -> None:
    code, _, err = keys(tmp_path, "set", "openai", stdin="\n")

    assert code == 2
    assert "the key is empty" in err
    assert not (tmp_path / "keys.json").exists()


def test_list_shows_names_never_values(tmp_path: Path) -> None:
    keys(tmp_path, "set", "openai", "--value", SECRET)

    code, out, err = keys(tmp_path, "list")
    assert code == 0
    assert "openai" in out
    assert SECRET not in out + err
    assert json.loads(keys(tmp_path, "list", "--json")[1]) == ["openai"]


def test_list_without_keys_says_how_to_add_one(tmp_path: Path) -> None:
    code, out, err = keys(tmp_path, "list")

    assert (code, out) == (0, "")
    assert "oracle keys set NAME" in err


def test_a_malformed_key_file_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "keys.json").write_text("{not json")

    code, _, err = keys(tmp_path, "list")

    assert code == 2
    assert str(tmp_path / "keys.json") in err
    assert "Traceback" not in err


def _request() -> ModelRequest:
    return ModelRequest(
        thread_id="t", run_id="r", step=1, model="", system_prompt="s",
        messages=({"role": "user", "content": "hi"},), tools=(),
    )  # fmt: skip


def _settings(home: Path, fake_openai: FakeOpenAI, **env: str) -> Settings:
    return Settings.from_env(
        {"ORACLE_HOME": str(home), "ORACLE_MODEL": "openai/fake-model",
         "ORACLE_API_BASE": fake_openai.url, **env}
    )  # fmt: skip


@pytest.mark.parametrize("client", ["auto", "litellm"])
@pytest.mark.parametrize("name", ["openai", "ORACLE_API_KEY"])
async def test_a_stored_key_reaches_the_model_server(
    fake_openai: FakeOpenAI, tmp_path: Path, client: str, name: str
) -> None:
    keys(tmp_path, "set", name, "--value", SECRET)
    fake_openai.script(Reply.text("ok"))
    settings = _settings(tmp_path, fake_openai, ORACLE_MODEL_CLIENT=client)

    await choose_model(None, settings).complete(_request())

    assert fake_openai.requests[0].headers["authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "ORACLE_API_KEY"])
async def test_a_key_in_the_environment_wins_over_a_stored_one(
    fake_openai: FakeOpenAI, tmp_path: Path, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys(tmp_path, "set", "openai", "--value", SECRET)
    fake_openai.script(Reply.text("ok"))
    settings = _settings(tmp_path, fake_openai, **{variable: "sk-from-env"})
    monkeypatch.setenv(variable, "sk-from-env")  # the SDK reads its variable from the process

    await choose_model(None, settings).complete(_request())

    assert fake_openai.requests[0].headers["authorization"] == "Bearer sk-from-env"


@pytest.mark.slow
def test_oracle_ask_uses_the_stored_key(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    home = tmp_path / "home"
    keys(home, "set", "openai", "--value", SECRET)
    fake_openai.script(Reply.text("ok"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORACLE_", "OPENAI_"))}
    env.update(
        ORACLE_HOME=str(home), ORACLE_LOAD_PLUGINS="", ORACLE_MODEL="openai/fake-model",
        ORACLE_API_BASE=fake_openai.url,
    )  # fmt: skip
    env = {k: v for k, v in env.items() if v != ""}

    result = subprocess.run(
        [sys.executable, "-m", "oracle_core", "ask", "hi"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert fake_openai.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in result.stdout + result.stderr
