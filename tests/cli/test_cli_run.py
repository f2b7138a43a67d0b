"""``oracle ask`` and ``oracle prompt`` as subprocesses, against the fake model over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import SitePackages, plugin_code

from oracle_core.testing.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.slow  # runs subprocesses: `pytest -m 'not slow'` skips it


@pytest.fixture
def oracle_env(site: SitePackages, fake_openai: FakeOpenAI) -> dict[str, str]:
    """The environment of an `oracle` subprocess with two test plugins and the fake model."""
    site.add(
        "oracle-plugin-fakecast",
        plugin_code("fakecast", tools=("get_forecast",)),
        entry_point="fakecast",
    )
    site.add(
        "oracle-plugin-notes",
        plugin_code("notes", visibility="always", tools=("note",)),
        entry_point="notes",
    )
    return {
        **os.environ,
        "PYTHONPATH": str(site.root),
        "ORACLE_HOME": str(site.root / "home"),
        "ORACLE_LOAD_PLUGINS": "fakecast,notes",
        "ORACLE_MODEL": "openai/fake-model",
        "ORACLE_API_BASE": fake_openai.url,
        "OPENAI_API_KEY": "sk-fake",
    }


@pytest.fixture
def run_oracle_input(oracle_env: dict[str, str]):  # type: ignore[no-untyped-def]
    def run(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "oracle_core", *args],
            env=oracle_env, input=stdin, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    return run


@pytest.fixture
def run_oracle(run_oracle_input):  # type: ignore[no-untyped-def]
    return lambda *args: run_oracle_input("", *args)


def test_ask_prints_the_answer_and_loads_persist_across_two_asks_on_a_thread(
    run_oracle, fake_openai: FakeOpenAI
) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(
        Reply.call("load_capability", {"names": ["fakecast"]}),
        Reply.call("get_forecast", {"text": "Porto"}),
        Reply.text("Rain in Porto."),
        Reply.text("Still rain."),
    )

    first = run_oracle("ask", "Weather in Porto?", "--thread", "trip")
    second = run_oracle("ask", "And tomorrow?", "--thread", "trip")

    assert first.returncode == 0, first.stderr
    assert first.stdout == "Rain in Porto.\n"
    assert second.stdout == "Still rain.\n"
    assert fake_openai.requests[0].tool_names == [
        "list_capabilities",
        "load_capability",
        "search_capabilities",
        "note",
    ]
    assert fake_openai.requests[3].tool_names == [
        "list_capabilities",
        "load_capability",
        "search_capabilities",
        "note",
        "get_forecast",
    ]
    assert [m["role"] for m in fake_openai.requests[3].messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant", "user",
    ]  # fmt: skip


def test_ask_json_shows_the_whole_turn(run_oracle, fake_openai: FakeOpenAI) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(
        Reply(tool_calls=[("load_capability", {"names": ["fakecast"]})], usage=(100, 7)),
        Reply(content="Done.", usage=(150, 3)),
    )

    result = run_oracle("ask", "hi", "--json")

    turn = json.loads(result.stdout)
    assert turn["status"] == "completed"
    assert turn["answer"] == "Done."
    assert turn["loaded"] == ["fakecast"]
    assert turn["usage"] == {"prompt_tokens": 250, "completion_tokens": 10, "total_tokens": 260}
    kinds = [e["type"] for e in turn["events"]]
    assert kinds == [
        "run_started", "model_call", "usage", "tool_call", "tool_result", "capability_loaded",
        "model_call", "usage", "done",
    ]  # fmt: skip
    split = turn["events"][1]["tokens"]
    assert (
        split["total"]
        == split["tier1"] + split["meta_tools"] + split["tool_schemas"] + split["messages"]
    )
    assert split["tier1"] > 0


def test_ask_reports_a_model_error_cleanly(run_oracle, fake_openai: FakeOpenAI) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(*[Reply.error(400, "bad request: context too long")] * 5)

    result = run_oracle("ask", "hi")

    assert result.returncode == 1
    assert "failed" in result.stderr
    assert "context too long" in result.stderr
    assert "Traceback" not in result.stderr


def test_prompt_shows_what_the_next_call_gets_with_token_counts(
    run_oracle, fake_openai: FakeOpenAI
) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(Reply.call("load_capability", {"names": ["fakecast"]}), Reply.text("ok"))
    run_oracle("ask", "hi", "--thread", "t1")

    report = json.loads(run_oracle("prompt", "--thread", "t1", "--json").stdout)
    text = run_oracle("prompt", "--thread", "t1").stdout

    assert report["loaded_plugins"] == ["fakecast"]
    assert [t["function"]["name"] for t in report["tools"]] == [
        "list_capabilities",
        "load_capability",
        "search_capabilities",
        "note",
        "get_forecast",
    ]
    assert "## Available Capabilities" in report["system_prompt"]
    assert (
        report["tokens"]["meta_tools"]
        == report["tokens"]["per_tool"]["list_capabilities"]
        + report["tokens"]["per_tool"]["load_capability"]
        + report["tokens"]["per_tool"]["search_capabilities"]
    )
    assert (
        report["tokens"]["tool_schemas"]
        == report["tokens"]["per_tool"]["note"] + report["tokens"]["per_tool"]["get_forecast"]
    )
    assert "Thread 't1' (loaded: fakecast)" in text
    assert f"Total: {report['tokens']['total']} tokens" in text


def test_chat_shows_tool_calls_and_loads_as_they_happen(
    run_oracle_input, fake_openai: FakeOpenAI
) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(
        Reply.call("load_capability", {"names": ["fakecast"]}),
        Reply.call("get_forecast", {"text": "Oslo"}),
        Reply.text("Snow in Oslo."),
    )

    result = run_oracle_input("Weather in Oslo?\n/exit\n", "chat", "--thread", "c1")

    assert result.returncode == 0, result.stderr
    out = result.stdout
    steps = [
        '→ load_capability({"names": ["fakecast"]})',
        "⊕ loaded fakecast",
        '→ get_forecast({"text": "Oslo"})',
        "← get_forecast:Oslo",
        "Snow in Oslo.",
    ]
    positions = [out.index(step) for step in steps]
    assert positions == sorted(positions)


def test_the_program_ends_as_it_did_before_its_objects_are_frozen_at_exit(
    site: SitePackages, oracle_env: dict[str, str]
) -> None:
    """``oracle`` freezes what is left when a command ends (no walk of every object at
    exit): exit codes, the whole output and ``atexit`` handlers are as before."""
    marker = site.root / "atexit-ran"
    site.add(
        "oracle-plugin-leaves",
        "import atexit, pathlib\n"
        f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'yes')\n"
        + plugin_code("leaves"),
        entry_point="leaves",
    )
    env = {**oracle_env, "ORACLE_LOAD_PLUGINS": "fakecast,notes,leaves"}

    def program(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "oracle_core", *args],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    listed = program("plugins", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {p["name"] for p in json.loads(listed.stdout)["plugins"]} == {
        "fakecast",
        "notes",
        "leaves",
    }
    assert marker.read_text() == "yes"
    assert program("plugins", "--no-such-flag").returncode == 2
