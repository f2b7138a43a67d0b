"""``oracle "prompt"``: a first word that is no command runs ``ask`` (as ``llm "prompt"``),
while every command stays reachable and a slip of a command's name is not sent to a model."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
from cli_support import model_env
from click.testing import CliRunner, Result

from oracle_core.cli import main
from oracle_core.cli.default_command import near_command
from oracle_core.testing.openai_server import FakeOpenAI, Reply


def oracle(home: Path, fake_openai: FakeOpenAI, *args: str) -> Result:
    env = model_env(home, fake_openai)
    return CliRunner().invoke(main, list(args), env=env, prog_name="oracle")


def asked(fake_openai: FakeOpenAI) -> list[str]:
    return [str(r.messages[-1]["content"]) for r in fake_openai.requests]


def test_a_prompt_as_the_first_word_is_asked(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("Four."))

    result = oracle(tmp_path, fake_openai, "What is 2+2?")

    assert result.exit_code == 0, result.output
    assert result.stdout == "Four.\n"
    assert asked(fake_openai) == ["What is 2+2?"]


def test_asks_options_may_come_first_or_after(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("a"), Reply.text("b"))

    first = oracle(tmp_path, fake_openai, "-m", "openai/other", "hello")
    after = oracle(tmp_path, fake_openai, "hello again", "-m", "openai/other")

    assert (first.exit_code, after.exit_code) == (0, 0), first.output + after.output
    assert [r.body["model"] for r in fake_openai.requests] == ["other", "other"]
    assert asked(fake_openai) == ["hello", "hello again"]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 12)))


@pytest.mark.parametrize("seed", range(5))
def test_any_word_that_is_no_command_nor_near_one_is_asked(
    tmp_path: Path, fake_openai: FakeOpenAI, seed: int
) -> None:
    rng = random.Random(seed)
    words = [w for w in (_word(rng) for _ in range(40)) if near_command(w, main.commands) is None]
    prompt = " ".join(words[:1] if seed % 2 else words[:4])
    fake_openai.script(Reply.text("ok"))

    result = oracle(tmp_path, fake_openai, prompt)

    assert result.exit_code == 0, result.output
    assert asked(fake_openai) == [prompt]


@pytest.mark.parametrize(
    ("slip", "command"),
    [("serv", "serve"), ("modles", "models"), ("thread", "threads"), ("instal", "install")],
)
def test_a_slip_of_a_command_is_not_sent_to_a_model(
    tmp_path: Path, fake_openai: FakeOpenAI, slip: str, command: str
) -> None:
    result = oracle(tmp_path, fake_openai, slip)

    assert result.exit_code == 2
    assert f"No such command '{slip}'. Did you mean '{command}'?" in result.stderr
    assert f"run: oracle ask {slip}" in result.stderr
    assert fake_openai.requests == []


def test_every_command_is_still_reachable(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    for name in main.commands:
        result = oracle(tmp_path, fake_openai, name, "--help")

        assert result.exit_code == 0, (name, result.output)
        assert result.stdout.startswith(f"Usage: oracle {name} "), name
    assert fake_openai.requests == []


def test_oracle_alone_and_its_help_and_version_are_the_groups(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    alone = oracle(tmp_path, fake_openai)
    helped = oracle(tmp_path, fake_openai, "--help")
    version = oracle(tmp_path, fake_openai, "--version")

    assert "Commands:" in alone.output and "Commands:" in helped.stdout
    assert 'oracle "PROMPT"' in helped.stdout
    assert version.exit_code == 0 and version.stdout.startswith("oracle, version ")
    assert fake_openai.requests == []
