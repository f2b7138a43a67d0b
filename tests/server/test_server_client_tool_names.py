"""A client tool named like a silent tool is answered exactly as one of a made-up name of the
same shape (issue 38, hole 10): no refusal tells the caller that a silent or hidden tool
exists. The client's tool takes that name for its run: the model is shown the client's only,
its call is handed back, and the silent tool never runs.

Seeded variants: a silent plugin's tool or an on-demand plugin's tool-level silent one, or a
made-up name of the same length and characters; alone or beside another client tool; whole
or streamed. Before, the silent name was a 400 ("has the name of a tool of the oracle", or
naming the tool's plugin) and the made-up one a 200.
"""

from __future__ import annotations

import json
import random
from typing import Any

from support import CodePlugin

from oracle_core.testing.openai_server import FakeOpenAI, Reply

AUTH = {"Authorization": "Bearer s3cret"}
SILENT = ("hush_note", "kit_secret")
CASES = 16


def client_tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": "The client's own.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }


def made_up(rng: random.Random, name: str) -> str:
    """A name no tool has, of the same shape: the same length and characters, reordered."""
    letters = [c for c in name if c != "_"]
    while True:
        rng.shuffle(letters)
        candidate = "".join(letters[:4]) + "_" + "".join(letters[4:])
        if len(candidate) == len(name) and candidate not in SILENT:
            return candidate


def seen(answer: Any, stream: bool, name: str) -> Any:
    """What a client sees of the answer, with ids, times and ``name`` made neutral.

    Token counts are left out: the request shows one tool fewer when the client's takes a
    silent one's place (a side channel the docs name; the answer itself reads the same).
    """
    text = answer.text.replace(name, "<name>")
    if stream:
        events = [json.loads(line[6:]) for line in text.splitlines() if line[6:].startswith("{")]
        body: Any = [_neutral(e) for e in events if e.get("choices")]
    else:
        body = _neutral(json.loads(text))
    return answer.status_code, body


def _neutral(value: Any) -> Any:
    """``value`` with every call id and thread id replaced by a placeholder."""
    if isinstance(value, dict):
        return {
            k: "<id>" if k in ("id", "thread_id", "run_id", "created") else _neutral(v)
            for k, v in value.items()
            if k != "usage"
        }
    if isinstance(value, list):
        return [_neutral(v) for v in value]
    return value


async def test_a_client_tool_named_like_a_silent_tool_is_answered_as_a_made_up_name_is(
    serve: Any, fake_openai: FakeOpenAI
) -> None:
    rng = random.Random(100)
    hush = CodePlugin("hush", visibility="silent", tools=("hush_note",))
    kit = CodePlugin(
        "kit", tools=("kit_open", "kit_secret"), tool_visibility={"kit_secret": "silent"}
    )
    served = await serve(hush, kit, tokens=("s3cret",))
    for index in range(CASES):
        silent = rng.choice(SILENT)
        other = made_up(rng, silent)
        beside = [client_tool("get_time")] if rng.random() < 0.5 else []
        stream = rng.random() < 0.5
        answers = []
        for name in (silent, other):
            fake_openai.script(Reply.call(name, {"q": "x"}))
            body = {
                "model": "oracle",
                "messages": [{"role": "user", "content": f"use {name}"}],
                "tools": [client_tool(name), *beside],
                "stream": stream,
            }

            answer = await served.client.post("/v1/chat/completions", json=body, headers=AUTH)

            answers.append(seen(answer, stream, name))
            if answer.status_code == 200:  # the model was shown the client's tool only
                sent = fake_openai.requests[-1]
                assert sent.tool_names.count(name) == 1, (index, name, sent.tool_names)
                [shown] = [t for t in sent.body["tools"] if t["function"]["name"] == name]
                assert shown["function"]["description"] == "The client's own."

        case = f"case {index} ({silent} / {other}, stream={stream}, beside={bool(beside)})"
        assert answers[0] == answers[1], case
        assert answers[0][0] == 200, (case, answers[0])
        assert "tool_calls" in json.dumps(answers[0][1]), case  # handed back to the client
    assert hush.calls == [] and kit.calls == []  # never run: the calls went to the client
