"""Model aliases (``[aliases]`` in ``oracle.toml``) wherever a model is named, and
``--key NAME`` on ``ask``/``chat`` choosing a stored key, as llm's aliases and ``--key`` do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from oracle_core.cli import main
from oracle_core.testing.openai_server import FakeOpenAI, Reply


def run(home: Path, fake: FakeOpenAI, *args: str, **env: str | None) -> Result:
    """``oracle ARGS`` in process against ``fake``, with only ``env`` set of ours."""
    environ: dict[str, str | None] = {
        "ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": "", "ORACLE_API_BASE": fake.url,
        "ORACLE_MODEL": None, "ORACLE_API_KEY": None, "OPENAI_API_KEY": "sk-default",
        "ORACLE_MODEL_CLIENT": None,
    }  # fmt: skip
    environ.update(env)
    return CliRunner().invoke(main, list(args), env=environ)


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "oracle.toml").write_text(text, encoding="utf-8")


ALIASES = '[aliases]\nfast = "openai/fake-fast"\nsmart = "openai/fake-smart"\n'


@pytest.mark.parametrize(
    ("args", "env", "sent"),
    [
        (["ask", "--model", "fast", "hi"], {}, "fake-fast"),
        (["ask", "hi"], {"ORACLE_MODEL": "smart"}, "fake-smart"),
        (["ask", "--model", "openai/fake-plain", "hi"], {}, "fake-plain"),  # not an alias
    ],
    ids=["--model alias", "ORACLE_MODEL alias", "model string"],
)
def test_an_alias_stands_for_its_model_string(
    tmp_path: Path, fake_openai: FakeOpenAI, args: list[str], env: dict[str, str], sent: str
) -> None:
    write_config(tmp_path, ALIASES)
    fake_openai.script(Reply.text("ok"))

    result = run(tmp_path, fake_openai, *args, **env)

    assert result.exit_code == 0, result.output
    assert fake_openai.requests[0].body["model"] == sent
    logs = run(tmp_path, fake_openai, "logs", "--json")
    assert json.loads(logs.stdout)[0]["model"] == f"openai/{sent}"  # recorded resolved


def test_oracle_models_lists_the_aliases_and_what_the_configured_one_stands_for(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    write_config(tmp_path, ALIASES)

    shown = run(tmp_path, fake_openai, "models", ORACLE_MODEL="fast")
    data = json.loads(run(tmp_path, fake_openai, "models", "--json", ORACLE_MODEL="fast").stdout)

    assert "Configured model: openai/fake-fast (alias fast)" in shown.stdout
    assert "  smart: openai/fake-smart" in shown.stdout
    assert data["aliases"] == {"fast": "openai/fake-fast", "smart": "openai/fake-smart"}
    assert data["configured"]["alias"] == "fast"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("fast = 3", "aliases.fast is an integer"),
        ('fast = ""', "expected a model string"),
        ('fast = ["a"]', "aliases.fast is"),
        ('"a/b" = "openai/x"', "an alias name without '/'"),
    ],
)
def test_a_bad_alias_is_one_line_naming_its_line(
    tmp_path: Path, fake_openai: FakeOpenAI, line: str, expected: str
) -> None:
    write_config(tmp_path, f"[aliases]\n{line}\n")

    result = run(tmp_path, fake_openai, "ask", "--model", "fast", "hi")

    assert result.exit_code == 2
    assert expected in result.stderr and "line 2" in result.stderr
    assert "Traceback" not in result.output and fake_openai.requests == []


def test_key_name_sends_the_stored_key_of_that_name(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    assert run(tmp_path, fake_openai, "keys", "set", "work", "--value", "sk-work").exit_code == 0
    fake_openai.script(Reply.text("ok"))

    result = run(tmp_path, fake_openai, "ask", "--model", "openai/m", "--key", "work", "hi",
                 ORACLE_API_KEY="sk-env")  # fmt: skip

    assert result.exit_code == 0, result.output
    assert fake_openai.requests[0].headers["authorization"] == "Bearer sk-work"
    assert "sk-work" not in result.output


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--key", "nosuch"], "no key named 'nosuch' is stored (stored: work)"),
        (["--key", "work", "--api-key", "sk-x"], "give --key NAME or --api-key KEY, not both"),
    ],
)
def test_key_name_refuses_a_missing_key_or_a_second_key(
    tmp_path: Path, fake_openai: FakeOpenAI, args: list[str], expected: str
) -> None:
    run(tmp_path, fake_openai, "keys", "set", "work", "--value", "sk-work")

    for command in ("ask", "chat"):
        extra = ["hi"] if command == "ask" else []
        result = run(tmp_path, fake_openai, command, "--model", "openai/m", *args, *extra)
        assert result.exit_code == 2, result.output
        assert expected in result.stderr
    assert fake_openai.requests == []
