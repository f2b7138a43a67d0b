"""The ``oracle.toml`` examples of the docs work as written when copied into a real
``oracle.toml``: plugin-authors.md's ``[plugins.<name>]`` tables beside the shipped weather
plugin, usage.md's ``[budgets]`` on a local model that no price table knows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import MakeOracle

from oracle_core import Oracle, Settings
from oracle_core.testing.openai_server import FakeOpenAI, Reply

DOCS = Path(__file__).resolve().parents[2] / "docs"


def toml_block(document: str, heading: str) -> str:
    """The first ```toml block of ``docs/<document>`` after the line ``heading``."""
    text = (DOCS / document).read_text(encoding="utf-8")
    after = text[text.index(f"\n{heading}\n") :]
    found = re.search(r"```toml\n(.*?)```", after, re.DOTALL)
    assert found is not None, f"no toml block under {heading!r} in {document}"
    return found.group(1)


def test_the_plugin_config_example_keeps_the_shipped_weather_plugin(tmp_path: Path) -> None:
    pytest.importorskip("oracle_plugin_weather")
    (tmp_path / "oracle.toml").write_text(toml_block("plugin-authors.md", "## Configuration"))
    settings = Settings.from_env(
        {"ORACLE_HOME": str(tmp_path), "ORACLE_LOAD_PLUGINS": "weather", "FORECASTER_KEY": "k"}
    )

    oracle = Oracle(settings=settings, model="demo")

    assert [f"{f.plugin}: {f}" for f in oracle.registry.failures] == []
    assert "weather" in oracle.registry
    assert oracle.registry.get("weather").config.timeout == 5.0  # type: ignore[union-attr]
    oracle.close_sync()


async def test_the_budgets_example_runs_on_a_model_without_a_price(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "oracle.toml").write_text(toml_block("usage.md", "## Budgets"))
    fake_openai.script(Reply(content="ok", usage=(20, 5)))  # a local server's model: unpriced
    oracle = make_oracle(settings=Settings.from_env({"ORACLE_HOME": str(home)}))

    result = await oracle.run("t1", "hi", user_id="ann")

    assert result.status == "completed", result.error
    assert result.answer == "ok"
