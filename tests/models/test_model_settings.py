"""Model-call settings an operator sets (docs/models.md): ``[models."<model>"]`` and
``[models."*"]`` in ``oracle.toml``, ``ORACLE_MODEL_TIMEOUT`` / ``ORACLE_MODEL_RETRIES`` /
``ORACLE_MAX_TOKENS``, and a run's own ``--max-tokens`` / ``--timeout`` / ``--retries`` (or
``RunOptions(model_options=...)``): which one wins, what a bad value says, and what reaches
the model server on both client paths."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from oracle_core import Oracle, RunOptions
from oracle_core.cli import main
from oracle_core.errors import ConfigError
from oracle_core.models.completions import ProviderModel
from oracle_core.models.openai import DEFAULT_MAX_TOKENS, RETRY_ON, model_for
from oracle_core.server import create_app
from oracle_core.settings import Settings
from oracle_core.settings.model_tables import DEFAULTS, KEYS, VARIABLES
from oracle_core.settings.model_tables import RETRY_ON as SETTINGS_RETRY_ON
from oracle_core.settings.reading import line_of
from oracle_core.settings.variables import unknown_variables
from oracle_core.store.memory import MemoryCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply

CLIENTS = ["auto", "litellm"]  # the direct path and the litellm path
MODEL = "openai/fake-model"


def write_config(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "oracle.toml"
    path.write_text(text, encoding="utf-8")
    return path


def settings_for(home: Path, **env: str) -> Settings:
    return Settings.from_env({"ORACLE_HOME": str(home), **env})


def run(home: Path, fake: FakeOpenAI, *args: str, **env: str | None) -> Result:
    """``oracle ARGS`` in process against ``fake``, with only ``env`` set of ours."""
    environ: dict[str, str | None] = {
        "ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": "", "ORACLE_API_BASE": fake.url,
        "ORACLE_MODEL": MODEL, "ORACLE_API_KEY": None, "OPENAI_API_KEY": "sk-fake",
        "ORACLE_MODEL_CLIENT": None, "ORACLE_MODEL_TIMEOUT": None,
        "ORACLE_MODEL_RETRIES": None, "ORACLE_MAX_TOKENS": None,
    }  # fmt: skip
    environ.update(env)
    return CliRunner().invoke(main, list(args), env=environ)


# -- which setting wins ----------------------------------------------------------------------

SOURCES = ("star", "env", "own")
VALUES = {"timeout": (11.0, 22.0, 33.0), "retries": (1, 4, 7), "max_tokens": (100, 200, 300)}


@pytest.mark.parametrize("key", list(VALUES))
@pytest.mark.parametrize(
    "present",
    [combo for n in range(4) for combo in itertools.combinations(SOURCES, n)],
    ids=lambda combo: "+".join(combo) or "none",
)
def test_the_model_table_beats_the_environment_which_beats_the_star_table(
    tmp_path: Path, key: str, present: tuple[str, ...]
) -> None:
    star, from_env, own = VALUES[key]
    text = ""
    if "star" in present:
        text += f'[models."*"]\n{key} = {star}\n'
    if "own" in present:
        text += f'[models."{MODEL}"]\n{key} = {own}\n'
    write_config(tmp_path, text)
    env = {VARIABLES[key]: str(from_env)} if "env" in present else {}

    calls = settings_for(tmp_path, **env).model_call_settings(MODEL)

    winner = next((s for s in ("own", "env", "star") if s in present), None)
    expected = dict(zip(SOURCES, VALUES[key], strict=True)).get(winner) if winner else None
    assert getattr(calls, key) == expected
    source = calls.sources.get(key)
    assert (
        source
        == {
            "own": f'[models."{MODEL}"] {key}',
            "env": VARIABLES[key],
            "star": f'[models."*"] {key}',
            None: None,
        }[winner]
    )


def test_a_table_of_another_model_does_not_apply(tmp_path: Path) -> None:
    write_config(tmp_path, '[models."openai/other"]\nmax_tokens = 9\n')

    assert settings_for(tmp_path).model_call_settings(MODEL).max_tokens is None


@pytest.mark.parametrize("asked", ["fast", MODEL])
def test_a_table_named_by_an_alias_configures_its_model_string(tmp_path: Path, asked: str) -> None:
    write_config(tmp_path, f'[aliases]\nfast = "{MODEL}"\n[models.fast]\nmax_tokens = 321\n')

    assert settings_for(tmp_path).model_call_settings(asked).max_tokens == 321


def test_two_tables_for_one_model_are_an_error_naming_both(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        f'[aliases]\nfast = "{MODEL}"\n[models."{MODEL}"]\nretries = 1\n'
        "[models.fast]\nretries = 2\n",
    )

    with pytest.raises(ConfigError) as caught:
        settings_for(tmp_path).check_config()

    message = str(caught.value)
    assert f"{path}, line 5" in message
    assert f'[models."{MODEL}"]' in message and "[models.fast]" in message
    assert "merge them into one table" in message


def test_the_retry_names_and_defaults_are_the_models_own() -> None:
    model = model_for(MODEL, api_key="sk-fake")
    assert isinstance(model, ProviderModel)

    assert SETTINGS_RETRY_ON == RETRY_ON
    assert DEFAULTS["timeout"] == model.timeout
    assert DEFAULTS["retries"] == model.num_retries
    assert set(DEFAULTS["retry_on"]) == set(model.retry_on)
    assert DEFAULTS["max_tokens"] == DEFAULT_MAX_TOKENS


def test_the_new_variables_are_known_and_not_warned_about() -> None:
    env = {variable: "1" for variable in VARIABLES.values()}

    assert unknown_variables(env) == []


# -- bad values ------------------------------------------------------------------------------


def _bad_value(rng: random.Random) -> tuple[str, str, str]:
    """A bad ``(key, value as TOML, the value as the message shows it)``, of a random class."""
    negative = -rng.randint(1, 10**6)
    classes: list[tuple[str, str, str]] = [
        ("timeout", '"fast"', '"fast"'),
        ("timeout", "true", "true"),
        ("timeout", "[30]", "[30]"),
        ("timeout", "{ s = 1 }", "a table"),
        ("timeout", str(negative), str(negative)),
        ("timeout", "0", "0"),
        *[("timeout", word, word) for word in [rng.choice(["nan", "inf", "-inf"])]],
        *[("retries", f'"{n}"', f'"{n}"') for n in [rng.randint(0, 9)]],
        ("retries", "false", "false"),
        ("retries", "1.5", "1.5"),
        ("retries", str(negative), str(negative)),
        ("max_tokens", "0", "0"),
        ("max_tokens", str(negative), str(negative)),
        ("max_tokens", "1024.0", "1024.0"),
        ("max_tokens", '"4096"', '"4096"'),
        ("temperature", "-0.5", "-0.5"),
        ("temperature", '"hot"', '"hot"'),
        ("temperature", "nan", "nan"),
        ("retry_on", '"timeout"', '"timeout"'),
        ("retry_on", "[429]", "429"),
        ("retry_on", '["teapot"]', '"teapot"'),
        ("retry_on", '["Timeout"]', '"Timeout"'),
        ("retry_on", "[true]", "true"),
        ("retry_on", '[["429"]]', '["429"]'),
    ]
    typo = rng.choice(KEYS)
    cut = rng.randrange(len(typo))
    unknown = typo[:cut] + typo[cut + 1 :] if rng.random() < 0.5 else f"{typo}_{rng.randint(1, 9)}"
    classes.append((unknown, "1", unknown))
    return rng.choice(classes)


@pytest.mark.parametrize("seed", range(40))
def test_every_bad_value_names_the_file_line_table_key_value_and_the_fix(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    key, value, shown = _bad_value(rng)
    table = rng.choice([MODEL, "openai/llama-3.2-1b", "*", "local"])
    header = f'[models."{table}"]'
    lines = ["[aliases]", 'local = "openai/llama3"', "", header]
    lines += rng.sample(["timeout = 30", "retries = 1", "max_tokens = 512"], rng.randint(0, 2))
    lines = [line for line in lines if not line.startswith(f"{key} =")]
    lines.append(f"{key} = {value}")
    path = write_config(tmp_path, "\n".join(lines) + "\n")

    with pytest.raises(ConfigError) as caught:
        settings_for(tmp_path).check_config()

    message = str(caught.value)
    assert message.startswith(f"{path}, line {len(lines)}: "), message
    assert header in message or f"[models.{table}]" in message
    assert key in message and shown in message
    assert "expected " in message
    assert caught.value.line == len(lines)
    assert caught.value.key == f"models.{table}.{key}"


@pytest.mark.parametrize(
    ("variable", "raw"),
    [
        ("ORACLE_MODEL_TIMEOUT", "0"),
        ("ORACLE_MODEL_TIMEOUT", "-5"),
        ("ORACLE_MODEL_TIMEOUT", "soon"),
        ("ORACLE_MODEL_RETRIES", "-1"),
        ("ORACLE_MODEL_RETRIES", "1.5"),
        ("ORACLE_MAX_TOKENS", "0"),
        ("ORACLE_MAX_TOKENS", "lots"),
    ],
)
def test_a_bad_environment_value_is_one_line_naming_the_variable(
    tmp_path: Path, fake_openai: FakeOpenAI, variable: str, raw: str
) -> None:
    result = run(tmp_path, fake_openai, "ask", "hi", **{variable: raw})

    assert result.exit_code == 2
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith("oracle: ")
    assert f"{variable}={raw!r} in the environment is not valid" in line
    assert fake_openai.requests == []


def test_a_bad_table_stops_every_command_before_a_model_is_called(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    path = write_config(tmp_path, f'[models."{MODEL}"]\nmax_tokens = -1\n')

    for args in (["ask", "hi"], ["config"]):
        result = run(tmp_path, fake_openai, *args)

        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == (
            f'oracle: {path}, line 2: [models."{MODEL}"] max_tokens = -1 is not valid: '
            "expected a whole number of at least 1, e.g. 1024"
        )
    assert fake_openai.requests == []


@pytest.mark.parametrize(
    "args",
    [["--max-tokens", "0"], ["--timeout", "0"], ["--timeout", "-1"], ["--retries", "-1"]],
)
def test_a_bad_flag_is_a_usage_error(
    tmp_path: Path, fake_openai: FakeOpenAI, args: list[str]
) -> None:
    result = run(tmp_path, fake_openai, "ask", *args, "hi")

    assert result.exit_code == 2
    assert args[0] in result.stderr
    assert fake_openai.requests == []


# -- oracle config ---------------------------------------------------------------------------


def test_oracle_config_shows_each_effective_value_and_where_it_was_set(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    write_config(
        tmp_path,
        f'[aliases]\nfast = "{MODEL}"\n[models."*"]\ntimeout = 300\n'
        '[models.fast]\nretry_on = ["timeout", "429"]\ntemperature = 0.2\n',
    )

    shown = run(
        tmp_path, fake_openai, "config", "--json", ORACLE_MODEL="fast", ORACLE_MAX_TOKENS="900"
    )
    text = run(tmp_path, fake_openai, "config", ORACLE_MODEL="fast", ORACLE_MAX_TOKENS="900")

    assert shown.exit_code == 0, shown.output
    calls = json.loads(shown.stdout)["model_calls"]
    assert calls == {
        "model": MODEL,
        "timeout": {"value": 300.0, "source": '[models."*"] timeout'},
        "retries": {"value": 2, "source": "built-in default"},
        "retry_on": {"value": ["timeout", "429"], "source": f'[models."{MODEL}"] retry_on'},
        "max_tokens": {"value": 900, "source": "ORACLE_MAX_TOKENS"},
        "temperature": {"value": 0.2, "source": f'[models."{MODEL}"] temperature'},
    }
    assert f"model calls:   {MODEL}" in text.stdout
    assert '  timeout:     300 s ([models."*"] timeout)' in text.stdout
    assert "  max tokens:  900 (ORACLE_MAX_TOKENS)" in text.stdout


def test_oracle_config_without_a_model_shows_the_defaults_of_every_model(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    result = run(tmp_path, fake_openai, "config", "--json", ORACLE_MODEL=None)

    calls = json.loads(result.stdout)["model_calls"]
    assert calls["model"] == "*"
    assert calls["max_tokens"] == {"value": DEFAULT_MAX_TOKENS, "source": "built-in default"}
    assert calls["temperature"] == {"value": None, "source": "built-in default"}


# -- what reaches the model server -----------------------------------------------------------

TABLE = f'[models."{MODEL}"]\nmax_tokens = 100\ntemperature = 0.3\n'


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(
    ("config", "env", "flags", "sent"),
    [
        (TABLE, {"ORACLE_MAX_TOKENS": "200"}, ["--max-tokens", "50"], {"max_tokens": 50}),
        (TABLE, {"ORACLE_MAX_TOKENS": "200"}, [], {"max_tokens": 100, "temperature": 0.3}),
        ("", {"ORACLE_MAX_TOKENS": "200"}, [], {"max_tokens": 200}),
        ("", {}, [], {"max_tokens": DEFAULT_MAX_TOKENS, "temperature": None}),
    ],
    ids=["flag", "table", "environment", "default"],
)
def test_max_tokens_reaches_the_request_body(
    tmp_path: Path,
    fake_openai: FakeOpenAI,
    client: str,
    config: str,
    env: dict[str, str],
    flags: list[str],
    sent: dict[str, Any],
) -> None:
    write_config(tmp_path, config)
    fake_openai.script(Reply.text("ok"))

    result = run(tmp_path, fake_openai, "ask", *flags, "hi", ORACLE_MODEL_CLIENT=client, **env)

    assert result.exit_code == 0, result.output
    body = fake_openai.requests[0].body
    assert {k: body.get(k) for k in sent} == sent
    assert "num_retries" not in body and "retry_on" not in body


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(
    ("config", "flags", "attempts"),
    [
        ("", ["--retries", "1"], 2),
        (f'[models."{MODEL}"]\nretries = 0\n', [], 1),
        (f'[models."{MODEL}"]\nretries = 0\n', ["--retries", "1"], 2),
        ('[models."*"]\nretries = 1\nretry_on = ["429", "timeout"]\n', [], 1),
    ],
    ids=["flag", "table", "flag over table", "500 not retried"],
)
def test_retries_and_retry_on_decide_how_often_a_failing_call_is_sent(
    tmp_path: Path,
    fake_openai: FakeOpenAI,
    client: str,
    config: str,
    flags: list[str],
    attempts: int,
) -> None:
    write_config(tmp_path, config)
    fake_openai.respond_with(lambda request: Reply.error(500, "the server broke"))

    result = run(tmp_path, fake_openai, "ask", *flags, "hi", ORACLE_MODEL_CLIENT=client)

    assert result.exit_code == 1
    assert "HTTP 500" in result.output
    assert len(fake_openai.requests) == attempts


@pytest.mark.parametrize("client", CLIENTS)
def test_the_timeout_flag_cuts_off_an_attempt_that_takes_too_long(
    tmp_path: Path, fake_openai: FakeOpenAI, client: str
) -> None:
    release = threading.Event()
    fake_openai.script(Reply(content="too late", hold=release))
    try:
        result = run(
            tmp_path, fake_openai, "ask", "--timeout", "0.3", "--retries", "0", "hi",
            ORACLE_MODEL_CLIENT=client, ORACLE_MODEL_TIMEOUT="60",
        )  # fmt: skip
    finally:
        release.set()

    assert result.exit_code == 1
    assert "timed out" in result.output.lower() or "timeout" in result.output.lower()
    assert len(fake_openai.requests) == 1


@pytest.mark.parametrize("client", CLIENTS)
def test_chat_flags_reach_every_turn(tmp_path: Path, fake_openai: FakeOpenAI, client: str) -> None:
    fake_openai.script(Reply.text("one"), Reply.text("two"))

    result = CliRunner().invoke(
        main,
        ["chat", "--max-tokens", "42"],
        input="first\nsecond\n/quit\n",
        env={
            "ORACLE_HOME": str(tmp_path), "ORACLE_LOAD_PLUGINS": "",
            "ORACLE_API_BASE": fake_openai.url, "ORACLE_MODEL": MODEL,
            "OPENAI_API_KEY": "sk-fake", "ORACLE_MODEL_CLIENT": client,
        },
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    assert [r.body.get("max_tokens") for r in fake_openai.requests] == [42, 42]


@pytest.mark.parametrize("client", CLIENTS)
def test_run_options_from_python_set_one_run_and_are_not_sent(
    tmp_path: Path, fake_openai: FakeOpenAI, client: str
) -> None:
    write_config(tmp_path, f'[models."{MODEL}"]\nmax_tokens = 100\n')
    settings = settings_for(
        tmp_path, ORACLE_MODEL=MODEL, ORACLE_API_BASE=fake_openai.url, ORACLE_LOAD_PLUGINS="",
        ORACLE_API_KEY="sk-fake", ORACLE_MODEL_CLIENT=client,
    )  # fmt: skip
    fake_openai.script(Reply.text("short"), Reply.text("long"))
    options = RunOptions(model_options={"max_tokens": 77, "timeout": 30, "num_retries": 0})

    async def go() -> None:
        async with Oracle(settings=settings, checkpointer=MemoryCheckpointer()) as oracle:
            await oracle.run("t", "hi", options=options)
            await oracle.run("t", "again")

    asyncio.run(go())

    first, second = (r.body for r in fake_openai.requests)
    assert first["max_tokens"] == 77
    assert second["max_tokens"] == 100  # the next run: the table again
    assert "num_retries" not in first and "timeout" not in first


def test_the_line_of_a_dotted_model_string_is_found() -> None:
    text = '[models."openai/llama-3.2-1b"]\ntimeout = 5\n'

    assert line_of(text, "models.openai/llama-3.2-1b.timeout") == 2


@pytest.mark.parametrize(("asked", "sent"), [({"max_tokens": 50}, 50), ({}, 100)])
async def test_the_http_endpoints_max_tokens_beats_the_models_table(
    tmp_path: Path, fake_openai: FakeOpenAI, asked: dict[str, Any], sent: int
) -> None:
    write_config(tmp_path, f'[models."{MODEL}"]\nmax_tokens = 100\n')
    settings = settings_for(
        tmp_path, ORACLE_MODEL=MODEL, ORACLE_API_BASE=fake_openai.url, ORACLE_LOAD_PLUGINS="",
        ORACLE_API_KEY="sk-fake",
    )  # fmt: skip
    fake_openai.script(Reply.text("ok"))
    oracle = Oracle(settings=settings, checkpointer=MemoryCheckpointer())
    app = create_app(oracle, tokens=("s3cret",))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as client,
    ):
        answer = await client.post(
            "/v1/chat/completions",
            headers={"Authorization": "Bearer s3cret"},
            json={"model": "oracle", "messages": [{"role": "user", "content": "hi"}], **asked},
        )

    assert answer.status_code == 200, answer.text
    assert fake_openai.requests[0].body["max_tokens"] == sent


def test_a_setting_written_straight_under_models_points_to_the_star_table(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[models]\ntimeout = 300\n")

    with pytest.raises(ConfigError) as caught:
        settings_for(tmp_path).check_config()

    assert str(caught.value) == (
        f"{path}, line 2: models.timeout is an integer; expected a table ([models.timeout]); "
        'a setting of every model goes in [models."*"] (timeout = ...)'
    )
