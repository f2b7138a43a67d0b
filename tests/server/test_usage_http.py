"""``GET /usage``: the usage ledger over HTTP, as ``oracle usage --json`` prints it."""

from __future__ import annotations

from support import CodePlugin

from oracle_core.testing.openai_server import FakeOpenAI, Reply


async def test_usage_reports_what_runs_spent_per_user(serve, fake_openai: FakeOpenAI) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(
        Reply(tool_calls=[("forecast", {})], usage=(30, 10)),
        Reply(content="sunny", usage=(50, 5)),
        Reply(content="hi", usage=(7, 3)),
    )
    served = await serve(CodePlugin("weather", visibility="always", tools=("forecast",)))
    await served.oracle.run("t1", "weather?", user_id="ann")
    await served.oracle.run("t2", "hello", user_id="bob")

    report = (await served.client.get("/usage", params={"since": "1h"})).json()

    groups = {g["key"]: g for g in report["groups"]}
    assert report["by"] == "user" and report["since"] is not None
    assert (groups["ann"]["prompt_tokens"], groups["ann"]["completion_tokens"]) == (80, 15)
    assert (groups["ann"]["runs"], groups["ann"]["tool_calls"]) == (1, 1)
    assert groups["bob"]["cost"] is None  # the fake model has no price: unknown, not 0
    assert report["total"]["model_calls"] == 3


async def test_usage_narrows_to_a_user_and_groups_by_plugin(serve, fake_openai: FakeOpenAI) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(
        Reply(tool_calls=[("forecast", {})], usage=(30, 10)), Reply(content="sunny", usage=(5, 5))
    )
    served = await serve(CodePlugin("weather", visibility="always", tools=("forecast",)))
    await served.oracle.run("t1", "weather?", user_id="ann")

    report = (await served.client.get("/usage", params={"user": "ann", "by": "plugin"})).json()

    assert [(g["key"], g["tool_calls"]) for g in report["groups"]] == [("weather", 1)]


async def test_usage_refuses_a_grouping_or_time_it_does_not_know(serve) -> None:  # type: ignore[no-untyped-def]
    served = await serve()

    by = await served.client.get("/usage", params={"by": "planet"})
    since = await served.client.get("/usage", params={"since": "yesterday-ish"})

    assert (by.status_code, since.status_code) == (422, 422)
    assert "by must be one of" in by.text
    assert "give 7d, 12h or 30m" in since.text


async def test_usage_needs_the_servers_token(serve) -> None:  # type: ignore[no-untyped-def]
    served = await serve(tokens=("s3cret",))

    refused = await served.client.get("/usage")
    allowed = await served.client.get("/usage", headers={"Authorization": "Bearer s3cret"})

    assert (refused.status_code, allowed.status_code) == (401, 200)
