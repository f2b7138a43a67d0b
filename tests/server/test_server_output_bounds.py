"""``oracle serve`` keeps answering while a structured-output request runs, whatever its
schema or its answer (issue 38, holes 1 and 2).

A real server in a process of its own (``oracle serve`` on 127.0.0.1, its model the scripted
OpenAI server): for each class of schema or answer that stalled the server (recursive
``$defs`` with a nested answer, backtracking patterns, a huge schema, ``$ref`` to a
loopback URL or a file), seeded variants are sent on the native API, ``/v1/chat/completions``
and ``/v1/responses`` while ``/health`` is asked again and again. ``/health`` answers every
time within the bound; the request ends with its named error; nothing is fetched.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from output_cases import (
    PLANTED,
    CountingServer,
    huge_schema,
    pattern_case,
    place,
    recursive_case,
    remote_refs,
)
from support import start_serve

from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.values.output_bounds import MAX_SCHEMA_CHARS

HEALTH_SECONDS = 0.1
"""How long ``/health`` takes, as a rule, while a structured-output request runs (the
median of every answer: the issue's bound)."""

NOT_STALLED = 2.5
"""The longest any one ``/health`` answer may take: generous, for a loaded machine (a whole
suite on two cores) where a worker thread's import or a collection of garbage holds the
interpreter a moment; before these bounds one request held it 5 s to minutes."""


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _serve(tmp: Path, fake: FakeOpenAI) -> tuple[Any, str]:
    env = {
        **os.environ,
        "ORACLE_HOME": str(tmp),
        "ORACLE_LOAD_PLUGINS": "",
        "ORACLE_MODEL": "openai/fake-model",
        "ORACLE_API_BASE": fake.url,
        "OPENAI_API_KEY": "sk-fake",
        "ORACLE_API_TOKEN": "",
    }
    process, url, _ = start_serve("bounds", env, wait=120)
    return process, url


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAI) -> Iterator[str]:
    process, url = _serve(tmp_path_factory.mktemp("bounds"), fake)
    yield url
    process.terminate()
    process.wait(60)


@pytest.fixture
def counting() -> Iterator[CountingServer]:
    server = CountingServer()
    server.start()
    yield server
    server.close()


def health_while(url: str, send: Callable[[httpx.Client], httpx.Response]) -> tuple[
    httpx.Response, list[float]
]:  # fmt: skip
    """``send``'s response, and how long each ``/health`` asked while it ran took."""
    answered: list[httpx.Response] = []
    with httpx.Client(base_url=url, timeout=120) as client, httpx.Client(
        base_url=url, timeout=30
    ) as probe:  # fmt: skip
        assert probe.get("/health").status_code == 200  # its connection is open
        thread = threading.Thread(target=lambda: answered.append(send(client)))
        thread.start()
        took: list[float] = []
        while thread.is_alive():
            started = time.monotonic()
            assert probe.get("/health").status_code == 200
            took.append(time.monotonic() - started)
            thread.join(0.02)
    return answered[0], took


def _posting(path: str, body: dict[str, Any]) -> Callable[[httpx.Client], httpx.Response]:
    # Encoded here, not in the sending thread: the probe shares this process's lock.
    content = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    return lambda client: client.post(path, content=content, headers=headers)


def native(schema: Any) -> Callable[[httpx.Client], httpx.Response]:
    body = {"message": "answer", "output_schema": schema}
    return _posting(f"/threads/t{random.getrandbits(40)}/runs", body)


def chat(schema: Any) -> Callable[[httpx.Client], httpx.Response]:
    response_format = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    body = {
        "model": "oracle",
        "messages": [{"role": "user", "content": "answer"}],
        "response_format": response_format,
    }
    return _posting("/v1/chat/completions", body)


def responses(schema: Any) -> Callable[[httpx.Client], httpx.Response]:
    form = {"type": "json_schema", "name": "x", "schema": schema}
    body = {"model": "oracle", "input": "answer", "text": {"format": form}}
    return _posting("/v1/responses", body)


ENTRIES = (native, chat, responses)


def _answering(fake: FakeOpenAI, answer: Any) -> None:
    text = json.dumps(answer)
    fake.respond_with(lambda request: Reply.text(text))


def fast(took: list[float]) -> bool:
    """Whether ``/health`` kept answering: each answer not stalled, the median within the
    issue's bound."""
    return not took or (max(took) < NOT_STALLED and statistics.median(took) < HEALTH_SECONDS)


def _error(response: httpx.Response) -> str:
    body = response.json()
    if "error" in body and isinstance(body["error"], dict):
        return str(body["error"]["message"])
    return str(body.get("error"))


def test_recursive_definitions_with_nested_answers_leave_health_answering(
    server: str, fake: FakeOpenAI
) -> None:
    rng = random.Random(3821)
    for case in range(4):
        schema, answer = recursive_case(rng)
        _answering(fake, answer)
        entry = ENTRIES[case % 2]  # native, chat: both report the run's error
        response, took = health_while(server, entry(schema))
        error = _error(response)
        assert "output schema" in error, error
        assert "was not checked: the check went past" in error or "not valid" in error
        assert took and fast(took), took


def test_backtracking_patterns_leave_health_answering(server: str, fake: FakeOpenAI) -> None:
    rng = random.Random(3822)
    for case in range(6):
        schema, answer = pattern_case(rng)
        _answering(fake, answer)
        response, took = health_while(server, ENTRIES[case % 2](schema))
        assert "output schema" in _error(response)
        assert took and fast(took), took


def test_a_huge_schema_is_a_400_on_every_entry_and_health_answers(
    server: str, fake: FakeOpenAI
) -> None:
    rng = random.Random(3823)
    fake.requests.clear()
    for case in range(6):
        schema = huge_schema(rng, rng.randrange(MAX_SCHEMA_CHARS, 900_000))  # under 1 MiB
        response, took = health_while(server, ENTRIES[case % 3](schema))
        assert response.status_code == 400
        assert f"more than the {MAX_SCHEMA_CHARS:,} allowed" in _error(response)
        assert fast(took), took
    assert fake.requests == []  # nothing was run


def test_references_outside_the_schema_are_a_400_and_never_fetched(
    server: str, fake: FakeOpenAI, counting: CountingServer, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text(f'{{"type": "integer", "description": "{PLANTED}"}}')
    rng = random.Random(3824)
    fake.requests.clear()
    _answering(fake, {"a": "not an integer"})
    sent = 0
    with httpx.Client(base_url=server, timeout=60) as client:
        for _ in range(2):
            for ref in remote_refs(rng, counting.base, str(secret)):
                response = rng.choice(ENTRIES)(place(rng, "$ref", ref))(client)
                assert response.status_code == 400, response.text
                assert "must point inside the schema" in _error(response)
                assert PLANTED not in response.text
                sent += 1
    assert sent == 22
    assert counting.requests == []  # was two GETs a run
    assert fake.requests == []


def test_the_first_structured_run_of_a_fresh_server_leaves_health_answering(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    process, url = _serve(tmp_path, fake)
    try:
        schema = huge_schema(random.Random(3825), MAX_SCHEMA_CHARS - 5_000)
        _answering(fake, {})
        response, took = health_while(url, native(schema))
        assert response.status_code == 200 and response.json()["status"] == "completed"
        assert fast(took), took
    finally:
        process.terminate()
        process.wait(60)
