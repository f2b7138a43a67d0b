"""``oracle ask``'s flags from llm: ``-m``, ``-s``, ``-o KEY VALUE``; and what it says of the
plugins it cannot use (one line each on stderr, ``-q`` hides them)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import ask
from support import SitePackages, plugin_code

from oracle_core.testing.openai_server import FakeOpenAI, Reply

# -- -m, -s, -o ---------------------------------------------------------------------------


def test_m_is_the_model(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("ok"))

    result = ask(tmp_path, fake_openai, "-m", "openai/other-model", "hi")

    assert result.exit_code == 0, result.output
    assert fake_openai.requests[0].body["model"] == "other-model"


def test_system_opens_the_system_prompt_and_the_capabilities_follow(
    site: SitePackages, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    site.add("oracle-plugin-tides", plugin_code("tides", visibility="always"), entry_point="tides")
    fake_openai.script(Reply.text("Arr."))

    result = ask(
        tmp_path, fake_openai, "-s", "You are a pirate. Answer in one word.", "hi",
        ORACLE_LOAD_PLUGINS="tides",
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    system = fake_openai.requests[0].system_prompt
    assert system.startswith("You are a pirate. Answer in one word.\n\n## Available Capabilities")
    assert "- **tides** — The tides plugin." in system  # the Tier-1 block still follows


@pytest.mark.parametrize("client", ["auto", "litellm"])
def test_options_reach_the_model_typed(
    tmp_path: Path, fake_openai: FakeOpenAI, client: str
) -> None:
    fake_openai.script(Reply.text("ok"))
    options = ["-o", "temperature", "0.25", "-o", "seed", "7", "-o", "stop", '["END", "##"]']

    result = ask(tmp_path, fake_openai, *options, "hi", ORACLE_MODEL_CLIENT=client)

    assert result.exit_code == 0, result.output
    body = fake_openai.requests[0].body
    assert (body["temperature"], body["seed"], body["stop"]) == (0.25, 7, ["END", "##"])


def test_the_flags_win_over_the_same_option(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("ok"))

    result = ask(tmp_path, fake_openai, "-o", "max_tokens", "10", "--max-tokens", "20", "hi")

    assert result.exit_code == 0, result.output
    assert fake_openai.requests[0].body["max_tokens"] == 20


BAD_VALUES = {
    "temperature": ["3", "-0.1", "hot", "[1]"],
    "top_p": ["1.5", "-1", "x"],
    "max_tokens": ["0", "-5", "ten", "1.5"],
    "seed": ["seven", "1.5", "{}"],
    "presence_penalty": ["2.5", "-3"],
    "logprobs": ["maybe", "2"],
    "top_logprobs": ["21", "-1"],
    "tool_choice": ["sometimes", "[1]"],
    "response_format": ["json", "[1, 2]"],
}


@pytest.mark.parametrize("seed", range(6))
def test_a_value_that_does_not_fit_is_refused_before_any_call(
    tmp_path: Path, fake_openai: FakeOpenAI, seed: int
) -> None:
    rng = random.Random(seed)
    option = rng.choice(sorted(BAD_VALUES))
    value = rng.choice(BAD_VALUES[option])

    result = ask(tmp_path, fake_openai, "-o", option, value, "hi")

    assert result.exit_code == 2, (option, value, result.output)
    line = result.stderr.strip().splitlines()[-1]
    assert f"-o {option} {value!r} does not fit:" in line
    assert fake_openai.requests == []


@pytest.mark.parametrize(
    ("option", "says"),
    [
        ("stream", "-o stream cannot be set: the oracle streams on a terminal itself"),
        ("tools", "-o tools cannot be set: the oracle sends its own tools"),
        ("n", "-o n cannot be set: the oracle reads one answer a call"),
    ],
)
def test_options_the_oracle_sets_itself_are_refused(
    tmp_path: Path, fake_openai: FakeOpenAI, option: str, says: str
) -> None:
    result = ask(tmp_path, fake_openai, "-o", option, "1", "hi")

    assert result.exit_code == 2
    assert says in result.stderr
    assert fake_openai.requests == []


def test_an_option_the_model_does_not_take_is_named_with_the_nearest(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    result = ask(tmp_path, fake_openai, "-o", "temprature", "0.2", "hi")

    assert result.exit_code == 2
    assert (
        "-o temprature: the model openai/fake-model does not take 'temprature' "
        "(did you mean temperature?)" in result.stderr
    )
    assert fake_openai.requests == []


def test_an_option_litellm_lists_for_another_provider_only_is_refused(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    # litellm's list for Ollama has no logprobs (OpenAI's does).
    result = ask(
        tmp_path, fake_openai, "-m", "ollama/llama3", "-o", "logprobs", "true", "hi",
        OLLAMA_API_BASE=fake_openai.url,
    )  # fmt: skip

    assert result.exit_code == 2
    assert "-o logprobs: the model ollama/llama3 does not take 'logprobs'" in result.stderr


# -- plugins that cannot be used ----------------------------------------------------------


@pytest.fixture
def broken_site(site: SitePackages) -> SitePackages:
    site.add("oracle-plugin-tides", plugin_code("tides"), entry_point="tides")
    site.add(
        "oracle-plugin-broken", "raise ImportError('no module named lunar')\n", entry_point="broken"
    )
    site.add("oracle-plugin-nomanifest", "X = 1\n", entry_point="nomanifest")
    return site


def test_each_plugin_left_out_is_one_line_on_stderr(
    broken_site: SitePackages, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Tides are high."))

    result = ask(tmp_path, fake_openai, "Tides?", ORACLE_LOAD_PLUGINS=None)

    assert result.exit_code == 0, result.output
    assert result.stdout == "Tides are high.\n"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, lines
    broken = next(line for line in lines if "'broken'" in line)
    assert broken.startswith("oracle: plugin 'broken' is left out: ")
    assert "no module named lunar" in broken
    assert broken.endswith("(`oracle plugins` says more)")
    assert any(line.startswith("oracle: plugin 'nomanifest' is left out: ") for line in lines)


def test_quiet_hides_the_lines(
    broken_site: SitePackages, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Tides are high."))

    result = ask(tmp_path, fake_openai, "-q", "Tides?", ORACLE_LOAD_PLUGINS=None)

    assert result.exit_code == 0, result.output
    assert result.stderr == ""


def test_a_misspelt_plugin_to_load_is_named_with_the_nearest(
    broken_site: SitePackages, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("ok"))

    result = ask(tmp_path, fake_openai, "hi", ORACLE_LOAD_PLUGINS="tide")

    assert result.exit_code == 0, result.output
    assert (
        "oracle: plugin 'tide' is left out: ORACLE_LOAD_PLUGINS names 'tide', but no installed "
        "plugin or distribution has that name (did you mean 'tides'?)" in result.stderr
    )


@pytest.mark.slow
@pytest.mark.parametrize("quiet", [False, True])
def test_a_misspelt_plugin_to_disable_is_a_warning_with_the_nearest(
    broken_site: SitePackages, tmp_path: Path, fake_openai: FakeOpenAI, quiet: bool
) -> None:
    fake_openai.script(Reply.text("ok"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORACLE_", "OPENAI_"))}
    env.update(
        ORACLE_HOME=str(tmp_path),
        ORACLE_MODEL="openai/fake-model",
        ORACLE_API_BASE=fake_openai.url,
        OPENAI_API_KEY="sk-fake",
        ORACLE_LOAD_PLUGINS="tides",
        ORACLE_DISABLE_PLUGINS="tdes,broken",
        PYTHONPATH=str(broken_site.root),
    )
    flags = ["-q"] if quiet else []

    result = subprocess.run(
        [sys.executable, "-m", "oracle_core", "ask", *flags, "hi"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    warning = (
        "ORACLE_DISABLE_PLUGINS names 'tdes', but no installed plugin, distribution or MCP "
        "server has that name (did you mean 'tides'?), so it disables nothing"
    )
    assert (warning in result.stderr) is not quiet
    assert "'broken'" not in result.stderr  # matched a plugin: no word about it
