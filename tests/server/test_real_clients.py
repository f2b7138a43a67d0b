"""The oracle driven by clients nobody on the project wrote.

Each test serves the app with ``oracle serve``'s uvicorn server on 127.0.0.1 (the clients take
a URL) and drives it with a real client: the official ``openai`` client, LangChain's
``ChatOpenAI``, litellm, simonw/llm's CLI and the MCP Inspector CLI (``mcp``'s own client is
in tests/server/mcp/test_mcp_export.py). The model behind the oracle is the fake OpenAI server, so each
test asserts what the client's user sees and what the model was sent.

The clients are test dependencies: the Python ones in the ``dev`` extra, the Inspector in
tests/node/package.json (``make pytest`` installs it when npm is there).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel
from support import Careful, CodePlugin

from oracle_core import PluginManifest, hookimpl, tool
from oracle_core.server import create_app
from oracle_core.testing.openai_server import FakeOpenAI, Reply

TOKEN = "s3cret"
META = ["list_capabilities", "load_capability", "search_capabilities"]
NODE = Path(__file__).parents[1] / "node"
INSPECTOR = NODE / "node_modules" / ".bin" / "mcp-inspector"

WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


class Trip(BaseModel):
    """A trip the user plans."""

    city: str
    days: int


TRIP = '{"city": "Lima", "days": 3}'

OracleAt = Callable[..., str]


@pytest.fixture
def oracle_at(make_oracle: Any, live: Any) -> OracleAt:
    """Serve an oracle over ``plugins`` on 127.0.0.1 (token ``s3cret``); its base URL."""

    def start(*plugins: object) -> str:
        host, port = live(create_app(make_oracle(*plugins), tokens=(TOKEN,)))
        return f"http://{host}:{port}"

    return start


def sent_tools(fake_openai: FakeOpenAI, step: int = 0) -> list[str]:
    """The tool names the model was offered on ``step``."""
    return fake_openai.requests[step].tool_names


def users(fake_openai: FakeOpenAI, step: int = -1) -> list[str]:
    """The user messages the model read on ``step``."""
    return [m["content"] for m in fake_openai.requests[step].messages if m["role"] == "user"]


# The official openai client: chat with client tools, streaming, the wait signal and
# /v1/responses are in test_server_openai*.py and test_server_responses.py; these add what
# a client sends that those do not.


@pytest.mark.parametrize(
    "choice",
    ["required", {"type": "function", "function": {"name": "get_weather"}}],
    ids=["required", "named"],
)
def test_openai_tool_choice_and_parallel_tool_calls_reach_the_model(
    oracle_at: OracleAt, fake_openai: FakeOpenAI, choice: Any
) -> None:
    fake_openai.script(Reply.call("get_weather", {"city": "Lima"}))
    client = openai.OpenAI(base_url=oracle_at() + "/v1", api_key=TOKEN, max_retries=0)

    reply = client.chat.completions.create(
        model="oracle",
        messages=[{"role": "user", "content": "Weather in Lima?"}],
        tools=[WEATHER],
        tool_choice=choice,
        parallel_tool_calls=False,
    )

    [call] = reply.choices[0].message.tool_calls or []
    assert (call.function.name, reply.choices[0].finish_reason) == ("get_weather", "tool_calls")
    body = fake_openai.requests[0].body
    assert (body["tool_choice"], body["parallel_tool_calls"]) == (choice, False)


def test_openai_parse_gives_the_pydantic_model_the_client_asked_for(
    oracle_at: OracleAt, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text(TRIP))
    client = openai.OpenAI(base_url=oracle_at() + "/v1", api_key=TOKEN, max_retries=0)

    reply = client.chat.completions.parse(
        model="oracle",
        messages=[{"role": "user", "content": "Plan three days in Lima."}],
        response_format=Trip,
    )

    assert reply.choices[0].message.parsed == Trip(city="Lima", days=3)
    form = fake_openai.requests[0].body["response_format"]
    assert form["type"] == "json_schema" and form["json_schema"]["name"] == "Trip"
    assert form["json_schema"]["schema"]["required"] == ["city", "days"]


def test_openai_responses_parse_gives_the_pydantic_model(
    oracle_at: OracleAt, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text(TRIP))
    client = openai.OpenAI(base_url=oracle_at() + "/v1", api_key=TOKEN, max_retries=0)

    reply = client.responses.parse(
        model="oracle", input="Plan three days in Lima.", text_format=Trip
    )

    assert reply.output_parsed == Trip(city="Lima", days=3)
    form = fake_openai.requests[0].body["response_format"]
    assert form["type"] == "json_schema"
    assert form["json_schema"]["schema"]["required"] == ["city", "days"]


# LangChain's ChatOpenAI.


def langchain_model(url: str, **options: Any) -> Any:
    """LangChain's ``ChatOpenAI`` with the oracle at ``url`` as its model."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=url + "/v1", api_key=TOKEN, model="oracle", max_retries=0, **options)


def test_langchain_bind_tools_runs_its_agent_loop_through_the_oracle(
    oracle_at: OracleAt, fake_openai: FakeOpenAI
) -> None:
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool as langchain_tool

    ran: list[str] = []

    @langchain_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return f"sunny in {city}, 24 C"

    fake_openai.script(
        Reply.call("get_weather", {"city": "Lima"}), Reply.text("Lima is sunny, 24 C.")
    )
    model = langchain_model(oracle_at(CodePlugin("weather"))).bind_tools([get_weather])
    messages: list[Any] = [HumanMessage("Weather in Lima?")]

    # LangChain's own loop: call the model, run each tool it asked for, call it again.
    while (reply := model.invoke(messages)).tool_calls:
        messages.append(reply)
        messages.extend(get_weather.invoke(call) for call in reply.tool_calls)

    assert reply.content == "Lima is sunny, 24 C."
    assert ran == ["Lima"]
    assert "get_weather" in sent_tools(fake_openai) and "load_capability" in sent_tools(fake_openai)
    assert fake_openai.requests[1].tool_results == ["sunny in Lima, 24 C"]


def test_langchain_over_the_responses_api_runs_the_same_agent_loop(
    oracle_at: OracleAt, fake_openai: FakeOpenAI
) -> None:
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool as langchain_tool

    @langchain_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}, 24 C"

    fake_openai.script(
        Reply.call("get_weather", {"city": "Lima"}), Reply.text("Lima is sunny, 24 C.")
    )
    model = langchain_model(oracle_at(), use_responses_api=True).bind_tools([get_weather])
    messages: list[Any] = [HumanMessage("Weather in Lima?")]

    while (reply := model.invoke(messages)).tool_calls:
        messages.append(reply)
        messages.extend(get_weather.invoke(call) for call in reply.tool_calls)

    assert reply.text == "Lima is sunny, 24 C."
    assert "get_weather" in sent_tools(fake_openai)
    assert fake_openai.requests[1].tool_results == ["sunny in Lima, 24 C"]


def test_langchain_streams_a_client_tool_call(oracle_at: OracleAt, fake_openai: FakeOpenAI) -> None:
    from langchain_core.tools import tool as langchain_tool

    @langchain_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return city

    fake_openai.script(Reply.call("get_weather", {"city": "Lima"}))
    model = langchain_model(oracle_at()).bind_tools([get_weather])

    chunks = list(model.stream("Weather in Lima?"))
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole += chunk

    assert [(c["name"], c["args"]) for c in whole.tool_calls] == [("get_weather", {"city": "Lima"})]
    assert whole.response_metadata["finish_reason"] == "tool_calls"
    assert fake_openai.requests[0].stream


def test_langchain_with_structured_output_gives_the_pydantic_model(
    oracle_at: OracleAt, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text(TRIP))
    model = langchain_model(oracle_at()).with_structured_output(Trip)

    trip = model.invoke("Plan three days in Lima.")

    assert trip == Trip(city="Lima", days=3)
    form = fake_openai.requests[0].body["response_format"]
    assert form["type"] == "json_schema"
    assert form["json_schema"]["schema"]["required"] == ["city", "days"]


def test_langchain_structured_output_is_repaired_once_when_the_model_writes_prose(
    oracle_at: OracleAt, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.text("Lima, for three days!"), Reply.text(TRIP))
    model = langchain_model(oracle_at()).with_structured_output(Trip)

    trip = model.invoke("Plan three days in Lima.")

    assert trip == Trip(city="Lima", days=3)
    assert len(fake_openai.requests) == 2  # the oracle's repair turn, not a client retry


# litellm as a client (the oracle itself also calls its model through litellm).


def litellm_client() -> Any:
    """litellm as the project imports it: prices read from the package, never downloaded."""
    from oracle_core.environment import import_litellm

    return import_litellm()


def test_litellm_gets_a_client_tool_call_then_the_answer(
    oracle_at: OracleAt, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(
        Reply.call("get_weather", {"city": "Lima"}), Reply.text("Lima is sunny, 24 C.")
    )
    litellm = litellm_client()
    where = {"model": "openai/oracle", "api_base": oracle_at() + "/v1", "api_key": TOKEN}
    asked: list[Any] = [{"role": "user", "content": "Weather in Lima?"}]

    first = litellm.completion(messages=asked, tools=[WEATHER], **where)
    [call] = first.choices[0].message.tool_calls
    reply = {"role": "tool", "tool_call_id": call.id, "content": "sunny, 24 C"}
    answered = [*asked, first.choices[0].message.model_dump(exclude_none=True), reply]
    second = litellm.completion(messages=answered, tools=[WEATHER], **where)

    assert first.choices[0].finish_reason == "tool_calls"
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Lima"},
    )
    assert second.choices[0].message.content == "Lima is sunny, 24 C."
    assert "get_weather" in sent_tools(fake_openai)
    assert fake_openai.requests[1].tool_results == ["sunny, 24 C"]


def approve(url: str, path: str) -> None:
    """Approve an operation as the person would: ``POST`` its decision path."""
    decided = httpx.post(
        url + path, json={"approve": True}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert decided.status_code == 200, decided.text


def test_a_litellm_user_finds_the_wait_in_the_oracle_object_and_gets_the_answer_after(
    oracle_at: OracleAt, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.call("delete_file", {"path": "a.txt"}), Reply.text("Deleted a.txt."))
    url, litellm = oracle_at(Careful()), litellm_client()
    where = {"model": "openai/oracle", "api_base": url + "/v1", "api_key": TOKEN}
    asked = [{"role": "user", "content": "Delete a.txt"}]

    waiting = litellm.completion(messages=asked, **where)
    signal = waiting.oracle  # litellm keeps the extra field (and maps the finish_reason to "stop")
    [operation] = signal["operations"]
    approve(url, operation["decide"]["path"])
    pinned = {"X-Oracle-Thread": signal["thread_id"]}
    answered = litellm.completion(messages=asked, extra_headers=pinned, **where)

    assert signal["status"] == "waiting_for_approval"
    assert (operation["tool"], operation["arguments"]) == ("delete_file", {"path": "a.txt"})
    assert answered.choices[0].message.content == "Deleted a.txt."
    assert len(fake_openai.requests) == 2


def test_a_langchain_user_sees_the_wait_as_the_finish_reason_and_gets_the_answer_after(
    oracle_at: OracleAt, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.call("delete_file", {"path": "a.txt"}), Reply.text("Deleted a.txt."))
    url = oracle_at(Careful())

    waiting = langchain_model(url, include_response_headers=True).invoke("Delete a.txt")
    thread = waiting.response_metadata["headers"]["x-oracle-thread"]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    pending = httpx.get(f"{url}/operations", params={"thread_id": thread}, headers=auth).json()
    [operation] = pending["operations"]
    approve(url, f"/operations/{operation['id']}/decision")
    answered = langchain_model(url, default_headers={"X-Oracle-Thread": thread}).invoke(
        "Delete a.txt"
    )

    assert waiting.response_metadata["finish_reason"] == "waiting_for_approval"
    assert operation["id"] in waiting.content  # the text says what waits, for a person to read
    assert answered.content == "Deleted a.txt."
    assert answered.response_metadata["finish_reason"] == "stop"


# simonw/llm's CLI, with the oracle as an extra OpenAI-compatible model.


def run_llm(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``llm -m oracle ARGS`` with its user folder at ``home`` naming the oracle at ``url``."""
    home.mkdir(exist_ok=True)
    (home / "extra-openai-models.yaml").write_text(
        "- model_id: oracle\n"
        "  model_name: oracle\n"
        f"  api_base: {url}/v1\n"
        "  api_key_name: oracle\n"
        "  supports_tools: true\n"
        "  supports_schema: true\n"
    )
    (home / "keys.json").write_text(json.dumps({"oracle": TOKEN}))  # as `llm keys set` writes
    env = {**os.environ, "LLM_USER_PATH": str(home), "LLM_LOAD_PLUGINS": ""}
    env.pop("OPENAI_API_KEY", None)
    llm = str(Path(sys.executable).with_name("llm"))
    done = subprocess.run(
        [llm, "-m", "oracle", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow
def test_llm_prompts_the_oracle_and_continues_the_conversation(
    oracle_at: OracleAt, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(
        Reply.call("load_capability", {"names": ["weather"]}),
        Reply.text("Rain in Porto."),
        Reply.text("Still rain."),
    )
    url, home = oracle_at(CodePlugin("weather")), tmp_path / "llm"

    first = run_llm(home, url, "Weather in Porto?")
    second = run_llm(home, url, "-c", "And tomorrow?")

    assert (first.stdout.strip(), second.stdout.strip()) == ("Rain in Porto.", "Still rain.")
    assert users(fake_openai) == ["Weather in Porto?", "And tomorrow?"]
    assert "weather_tool" in sent_tools(fake_openai, 2)  # llm -c is stateless: the load held


@pytest.mark.slow
def test_llm_functions_are_client_tools_llm_runs_itself(
    oracle_at: OracleAt, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(
        Reply.call("get_weather", {"city": "Lima"}), Reply.text("Lima is sunny, 24 C.")
    )
    functions = (
        "def get_weather(city: str) -> str:\n"
        '    "The weather in a city."\n'
        '    return f"sunny in {city}, 24 C"\n'
    )

    done = run_llm(
        tmp_path / "llm", oracle_at(), "-T", "llm_version", "--functions", functions, "Weather?"
    )

    assert done.stdout.strip() == "Lima is sunny, 24 C."
    offered = sent_tools(fake_openai)
    assert {"get_weather", "llm_version", "load_capability"} <= set(offered)
    assert fake_openai.requests[1].tool_results == ["sunny in Lima, 24 C"]


@pytest.mark.slow
def test_llm_schema_gets_json_for_its_schema(
    oracle_at: OracleAt, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(Reply.text(TRIP))

    done = run_llm(tmp_path / "llm", oracle_at(), "--schema", "city, days int", "Plan Lima.")

    assert json.loads(done.stdout) == {"city": "Lima", "days": 3}
    form = fake_openai.requests[0].body["response_format"]
    assert form["type"] == "json_schema"
    assert form["json_schema"]["schema"]["properties"]["days"] == {"type": "integer"}


# The MCP Inspector CLI (npm), against /mcp.


class Notes:
    """An on-demand plugin with one tool."""

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(name="notes", summary="Counts notes.", when_to_use=["notes"])

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        @tool
        def note_count(folder: str) -> int:
            """How many notes a folder holds."""
            return len(folder)

        return [note_count]


def inspector(url: str, home: Path, *args: str) -> Any:
    """Run the Inspector CLI against ``url``'s ``/mcp`` with the token; its JSON answer.

    Its HOME is ``home``: it keeps a catalog and storage there.
    """
    if not INSPECTOR.exists():
        if shutil.which("npm") is None:
            pytest.skip("the MCP Inspector CLI is an npm package, and npm is not installed")
        pytest.fail(
            f"the MCP Inspector CLI is not installed: run `make pytest` (npm install --prefix {NODE})"
        )
    home.mkdir(exist_ok=True)
    command = [str(INSPECTOR), "--cli", f"{url}/mcp", "--transport", "http"]
    command += ["--header", f"Authorization: Bearer {TOKEN}", *args]
    done = subprocess.run(
        command, env={**os.environ, "HOME": str(home)}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(done.stdout)


def names(listed: Any) -> list[str]:
    """The tool names of an Inspector ``tools/list`` answer."""
    return [t["name"] for t in listed["tools"]]


@pytest.mark.slow
def test_the_inspector_lists_the_meta_tools_and_calls_one(
    oracle_at: OracleAt, tmp_path: Path
) -> None:
    url = oracle_at(Notes())

    listed = inspector(url, tmp_path, "--method", "tools/list")
    found = inspector(
        url, tmp_path, "--method", "tools/call", "--tool-name", "search_capabilities",
        "--tool-arg", 'queries=["count my notes"]',
    )  # fmt: skip

    assert names(listed) == META
    assert found.get("isError") is not True
    assert "notes" in found["content"][0]["text"]


@pytest.mark.slow
def test_the_inspector_loads_in_one_run_and_calls_the_loaded_tool_in_the_next(
    oracle_at: OracleAt, tmp_path: Path
) -> None:
    # Each Inspector run is a new MCP session, and it calls only tools it sees listed: the
    # X-Oracle-Thread header keeps the load for the next run.
    url, pinned = oracle_at(Notes()), ("--header", "X-Oracle-Thread: desk")

    before = inspector(url, tmp_path, *pinned, "--method", "tools/list")
    loaded = inspector(
        url, tmp_path, *pinned, "--method", "tools/call", "--tool-name", "load_capability",
        "--tool-arg", 'names=["notes"]',
    )  # fmt: skip
    after = inspector(url, tmp_path, *pinned, "--method", "tools/list")
    called = inspector(
        url, tmp_path, *pinned, "--method", "tools/call", "--tool-name", "note_count",
        "--tool-arg", "folder=abcd",
    )  # fmt: skip
    elsewhere = inspector(url, tmp_path, "--method", "tools/list")

    assert names(before) == META
    assert json.loads(loaded["content"][0]["text"])[0]["name"] == "notes"
    assert names(after) == [*META, "note_count"]
    assert called["content"][0]["text"] == "4"
    assert names(elsewhere) == META  # no header: a thread of its own, nothing loaded
