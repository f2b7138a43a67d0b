"""``oracle models``: the configured model, its client and key source, and litellm's known
models of each provider that has a key, read from litellm's local list (no model is called,
nothing is fetched: the test guard blocks any real request)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from oracle_core.cli import main

SECRET = "sk-stored-0123456789"


def oracle(home: Path, *args: str, **env: str) -> tuple[int, str, str]:
    """``oracle ARGS`` in process with no provider variable set: (exit code, stdout, stderr)."""
    environ: dict[str, str | None] = {
        "ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": "", "ORACLE_MODEL": None,
        "ORACLE_API_KEY": None, "OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": None,
        "ORACLE_MODEL_CLIENT": None, **env,
    }  # fmt: skip
    result = CliRunner().invoke(main, list(args), env=environ)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_models_lists_the_configured_model_and_openai_models_with_a_stored_key(
    tmp_path: Path,
) -> None:
    oracle(tmp_path, "keys", "set", "openai", "--value", SECRET)

    code, out, _ = oracle(tmp_path, "models", ORACLE_MODEL="openai/gpt-4o-mini")

    assert code == 0
    assert "Configured model: openai/gpt-4o-mini" in out
    assert "client: direct (HTTP, no litellm); key: stored key 'openai'" in out
    assert "openai (key: stored key 'openai')" in out
    assert "  openai/gpt-4o\n" in out
    assert SECRET not in out


def test_models_json_names_providers_models_and_key_sources_without_values(
    tmp_path: Path,
) -> None:
    oracle(tmp_path, "keys", "set", "openai", "--value", SECRET)

    code, out, _ = oracle(
        tmp_path, "models", "--json", ORACLE_MODEL="anthropic/claude-3-5-haiku-20241022"
    )

    assert code == 0
    report = json.loads(out)
    assert report["configured"] == {
        "model": "anthropic/claude-3-5-haiku-20241022",
        "alias": None,
        "client": "litellm",
        "provider": "anthropic",
        "key": None,
    }
    [openai] = report["providers"]  # anthropic has no key
    assert openai["provider"] == "openai"
    assert "openai/gpt-4o-mini" in openai["models"]
    assert SECRET not in out


def test_a_provider_variable_counts_as_a_key(tmp_path: Path) -> None:
    code, out, _ = oracle(tmp_path, "models", "--json", ANTHROPIC_API_KEY="sk-ant")

    assert code == 0
    [anthropic] = json.loads(out)["providers"]
    assert anthropic["key"] == "ANTHROPIC_API_KEY"
    assert all(m.startswith("anthropic/") for m in anthropic["models"])


def test_without_a_key_models_says_how_to_add_one(tmp_path: Path) -> None:
    code, out, _ = oracle(tmp_path, "models", ORACLE_MODEL="openai/gpt-4o-mini")

    assert code == 0
    assert "key: none" in out
    assert "No provider has a key. Add one with `oracle keys set openai`" in out


def test_without_a_model_models_says_how_to_set_one(tmp_path: Path) -> None:
    code, out, _ = oracle(tmp_path, "models")

    assert code == 0
    assert "Configured model: none (no model is configured: set ORACLE_MODEL" in out


def test_the_demo_model_is_named_as_the_offline_stand_in(tmp_path: Path) -> None:
    out = oracle(tmp_path, "models", ORACLE_MODEL="demo", ORACLE_API_KEY="sk-any")[1]

    assert "client: demo (the offline scripted stand-in); key: none needed" in out
    assert "No provider has a key" in out  # the stand-in's key counts for no provider


def test_only_chat_models_a_run_can_call_are_listed(tmp_path: Path) -> None:
    from oracle_core.environment import import_litellm

    litellm = import_litellm()

    code, out, _ = oracle(tmp_path, "models", "--json", OPENAI_API_KEY="sk-x")

    listed = next(p for p in json.loads(out)["providers"] if p["provider"] == "openai")["models"]
    assert code == 0
    assert "openai/container" not in listed  # litellm files a code interpreter under "chat"
    assert "openai/gpt-4o-mini" in listed
    for model in listed:  # each has a mode of chat and a context window or a token price
        entry = litellm.model_cost.get(model) or litellm.model_cost[model.removeprefix("openai/")]
        assert entry["mode"] == "chat", model
        assert any(entry.get(f) for f in ("max_input_tokens", "max_tokens", "input_cost_per_token"))


def test_the_chat_rule_reads_the_table_not_the_name() -> None:
    from oracle_core.cli.models import is_chat_model

    assert is_chat_model({"mode": "chat", "max_input_tokens": 128000})
    assert is_chat_model({"mode": "chat", "input_cost_per_token": 1e-6})
    assert not is_chat_model({"mode": "chat", "code_interpreter_cost_per_session": 0.03})
    assert not is_chat_model({"mode": "embedding", "max_input_tokens": 8191})
    assert not is_chat_model({"mode": "image_generation", "max_tokens": 4000})
