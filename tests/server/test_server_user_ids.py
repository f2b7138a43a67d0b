"""One rule for ``user``, ``user_id`` and thread ids at every entry of the server (issue 38,
holes 6 and 10): a lone surrogate, a control character or more than 200 characters is a 422
naming the field on the native API, ``/v1/chat/completions``, ``/v1/responses`` and
``/connections``, nothing runs, and the server goes on answering; a good id reaches the usage
ledger (SQLite) as it was sent.

Before: a lone surrogate in ``user`` on ``/v1`` was a 500 (the run failed writing the ledger),
and ``/v1`` took a 10,000-character ``user`` the native API refuses.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from id_samples import bad_thread, bad_user, good_user

from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply

AUTH = {"Authorization": "Bearer s3cret", "Content-Type": "application/json"}
CASES = 60


def _entry(kind: str, user: str) -> tuple[str, str, dict[str, Any]]:
    """The method, path and body that send ``user`` to one entry, and the field's name."""
    if kind == "native":
        return "/threads/t-native/runs", "user_id", {"message": "hi", "user_id": user}
    if kind == "chat":
        chat = {"model": "oracle", "messages": [{"role": "user", "content": "hi"}], "user": user}
        return "/v1/chat/completions", "user", chat
    if kind == "responses":
        return "/v1/responses", "user", {"model": "oracle", "input": "hi", "user": user}
    return "/connections/none/key", "user_id", {"value": "k", "user_id": user}


async def _post(served: Any, path: str, body: dict[str, Any]) -> Any:
    """POST ``body`` as JSON text with escapes, as a client sends lone surrogates."""
    method = "PUT" if path.startswith("/connections") else "POST"
    return await served.client.request(method, path, content=json.dumps(body), headers=AUTH)


@pytest.fixture
async def served(serve: Any, tmp_path: Path) -> Any:
    """The app over an oracle whose store (and usage ledger) is a SQLite file."""
    return await serve(tokens=("s3cret",), checkpointer=SQLiteCheckpointer(tmp_path / "o.db"))


async def test_a_bad_user_is_a_422_naming_the_field_at_every_entry_and_nothing_runs(
    served: Any, fake_openai: FakeOpenAI
) -> None:
    rng = random.Random(66)
    for index in range(CASES):
        user, why = bad_user(rng)
        kind = ("native", "chat", "responses", "connections")[index % 4]
        path, field, body = _entry(kind, user)

        answer = await _post(served, path, body)

        case = f"case {index} ({kind}, {why}, {user[:30]!r}): {answer.text[:300]}"
        assert answer.status_code == 422, case
        error = answer.json()["error"]
        assert error["type"] in ("invalid_user_id", "invalid_request"), case
        assert field in error["message"], case
    assert fake_openai.requests == []  # no run began
    usage = await served.client.get("/usage", headers=AUTH)
    assert usage.status_code == 200 and usage.json()["groups"] == []
    assert (await served.client.get("/health")).status_code == 200


async def test_a_bad_thread_id_on_v1_is_a_422_in_the_header_or_the_field(
    served: Any, fake_openai: FakeOpenAI
) -> None:
    rng = random.Random(67)
    for index in range(CASES):
        thread = bad_thread(rng)
        body: dict[str, Any] = {"model": "oracle", "messages": [{"role": "user", "content": "hi"}]}
        headers = dict(AUTH)
        if index % 2 or not thread.isprintable() or not thread.isascii():
            body["thread_id"] = thread  # a header cannot carry these
        else:
            headers["X-Oracle-Thread"] = thread

        answer = await served.client.post(
            "/v1/chat/completions", content=json.dumps(body), headers=headers
        )

        case = f"case {index} ({thread[:40]!r}): {answer.text[:300]}"
        assert answer.status_code == 422, case
        assert answer.json()["error"]["type"] == "invalid_thread_id", case
    assert fake_openai.requests == []


async def test_a_good_user_reaches_the_usage_ledger_as_sent_at_every_entry(
    served: Any, fake_openai: FakeOpenAI
) -> None:
    rng = random.Random(68)
    sent: set[str] = set()
    for index in range(12):
        user = good_user(rng)[:195] + f"#{index}"
        kind = ("native", "chat", "responses")[index % 3]
        path, _, body = _entry(kind, user)
        fake_openai.script(Reply.text("ok"))

        answer = await _post(served, path, body)

        assert answer.status_code == 200, f"{kind} {user!r}: {answer.text[:300]}"
        sent.add(user)
    usage = await served.client.get("/usage", params={"by": "user"}, headers=AUTH)
    assert {g["key"] for g in usage.json()["groups"]} == sent
