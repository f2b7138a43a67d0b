"""A plugin's own model calls (``oracle.model`` of the handle it is given) are in the usage
ledger, put down to the plugin, and spend from the budgets, as a run's calls are
(run/plugin_calls.py): from tools, middleware, startup hooks and routes, on a real SQLite
file and on Postgres when it is up."""

from __future__ import annotations

import asyncio
import json
import random
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from stores import PgSchema
from support import serve_app

from oracle_core import (
    BudgetExceededError,
    Middleware,
    ModelRequest,
    ModelResponse,
    Oracle,
    PluginManifest,
    Route,
    Settings,
    ToolContext,
    hookimpl,
    tool,
)
from oracle_core.authoring.middleware import ModelHandler
from oracle_core.store import SQLiteCheckpointer
from oracle_core.store.base import Checkpointer
from oracle_core.store.usage import UsageEntry
from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest
from oracle_core.values.events import ToolResultEvent

MARK = "PLUGIN-CALL"
PLUGIN_USAGE = (7, 3)
SEEDS = range(10)


@dataclass
class Counts:
    """How many model calls the plugin makes from each place (each time it is there)."""

    startup: int = 0
    middleware: int = 0
    tool: int = 0
    route: int = 0
    streamed: bool = False  # through ``model.stream`` instead of ``model.complete``


def plugin_request(i: int) -> ModelRequest:
    return ModelRequest(
        thread_id="ignored", run_id="ignored", step=1, model="", system_prompt="plugin",
        messages=({"role": "user", "content": f"{MARK} {i}"},), tools=(),
    )  # fmt: skip


class Scribe:
    """A plugin that calls the model itself from each place a plugin can."""

    def __init__(self, counts: Counts) -> None:
        self.counts = counts
        self.handle: Any = None
        self.refusals: list[str] = []

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name="scribe", summary="Writes things down.", when_to_use=["writing"],
            visibility="always",
        )  # fmt: skip

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        @tool
        async def summarize(text: str, context: ToolContext) -> str:
            """Summarize the text."""
            return await self.calls(context.oracle, self.counts.tool)

        return [summarize]

    @hookimpl
    def oracle_middleware(self) -> list[Middleware]:
        return [Asking(self)]

    @hookimpl
    def oracle_routes(self) -> list[Route]:
        return [Route("/ask", self.route)]

    @hookimpl
    async def oracle_startup(self, oracle: Any) -> None:
        self.handle = oracle
        await self.calls(oracle, self.counts.startup)

    async def calls(self, oracle: Any, n: int) -> str:
        made = 0
        for i in range(n):
            try:
                if self.counts.streamed:
                    pieces = [p async for p in oracle.model.stream(plugin_request(i))]
                    assert isinstance(pieces[-1], ModelResponse)
                else:
                    await oracle.model.complete(plugin_request(i))
            except BudgetExceededError as error:
                self.refusals.append(str(error))
                return f"made {made}, refused: {error}"
            made += 1
        return f"made {made}"

    async def route(self, request: Any) -> dict[str, str]:
        return {"said": await self.calls(self.handle, self.counts.route)}


class Asking(Middleware):
    def __init__(self, owner: Scribe) -> None:
        self.owner = owner

    async def wrap_model_call(
        self, request: ModelRequest, call_next: ModelHandler
    ) -> ModelResponse:
        await self.owner.calls(self.owner.handle, self.owner.counts.middleware)
        return await call_next(request)


def answer(seen: SeenRequest) -> Reply:
    """The plugin's calls get a note; a run calls the tool once, then answers."""
    if MARK in str(seen.messages[-1].get("content")):
        return Reply(content="noted", usage=PLUGIN_USAGE)
    if any(m.get("role") == "tool" for m in seen.messages):
        return Reply(content="done", usage=(50, 5))
    return Reply(tool_calls=[("summarize", {"text": "x"})], usage=(30, 10))


def settings(tmp_path: Path, budgets: str = "") -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if budgets:
        (home / "oracle.toml").write_text(f"[budgets]\n{budgets}\n", encoding="utf-8")
    # the first model call imports litellm, in the startup hook here: give it time
    return Settings.from_env({"ORACLE_HOME": str(home), "ORACLE_HOOK_TIMEOUT": "120"})


Row = tuple[str, str, str, str, int, int]


def plugin_rows(entries: list[UsageEntry]) -> Counter[Row]:
    """The ledger's model calls of plugins: (plugin, run, thread, user, tokens in, out)."""
    return Counter(
        (e.plugin, e.run_id, e.thread_id, e.user_id, e.prompt_tokens, e.completion_tokens)
        for e in entries
        if e.kind == "model" and e.plugin
    )


@pytest.fixture(params=["sqlite", "postgres"])
def store_of(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Checkpointer]:
    """Opens the test's store (a real SQLite file, or a Postgres schema of its own)."""
    if request.param == "sqlite":
        return lambda: SQLiteCheckpointer(tmp_path / "oracle.db")
    schema: PgSchema = request.getfixturevalue("pg_schema")
    return schema.store


@pytest.mark.parametrize("budgeted", [False, True], ids=["no budgets", "under budgets"])
@pytest.mark.parametrize("seed", SEEDS)
async def test_plugin_model_calls_from_startup_middleware_and_tools_are_in_the_ledger(
    fake_openai: FakeOpenAI,
    tmp_path: Path,
    store_of: Callable[[], Checkpointer],
    seed: int,
    budgeted: bool,
) -> None:
    rng = random.Random(seed)
    counts = Counts(
        startup=rng.randint(1, 3), middleware=rng.randint(1, 3), tool=rng.randint(1, 3),
        streamed=rng.random() < 0.5,
    )  # fmt: skip
    fake_openai.respond_with(answer)
    scribe = Scribe(counts)
    roomy = "user_day_requests = 1000\nthread_day_tokens = 1000000" if budgeted else ""
    store = store_of()
    oracle = Oracle(
        [scribe], entry_points=False, model=fake_openai.model(), checkpointer=store,
        settings=settings(tmp_path, roomy),
    )  # fmt: skip
    try:
        thread, user = f"t-{seed}", f"user-{seed}"
        result = await oracle.run(thread, "write it down", user_id=user)
        entries = await store.usage()
        by_plugin, _ = await store.usage_summary(by="plugin")
    finally:
        await oracle.close()

    assert result.status == "completed", result.error
    made = counts.startup + 2 * counts.middleware + counts.tool
    scribe_usage = next(g for g in by_plugin if g.key == "scribe")
    assert (scribe_usage.model_calls, scribe_usage.prompt_tokens, scribe_usage.tool_calls) == (
        made,
        made * PLUGIN_USAGE[0],
        1,
    )
    assert scribe_usage.runs == 1  # calls made outside a run are no run
    run = result.run_id
    assert plugin_rows(entries) == Counter(
        {
            ("scribe", "", "", "default", *PLUGIN_USAGE): counts.startup,
            # before each of the run's two model calls, then inside its one tool call
            ("scribe", run, thread, user, *PLUGIN_USAGE): 2 * counts.middleware + counts.tool,
        }
    )
    # the run's own calls stay as they were: no plugin, its own tokens
    runs = [
        (e.prompt_tokens, e.completion_tokens)
        for e in entries
        if e.kind == "model" and not e.plugin
    ]
    assert sorted(runs) == [(30, 10), (50, 5)]


@pytest.mark.parametrize("scope", ["user", "thread"])
@pytest.mark.parametrize("seed", SEEDS)
async def test_a_spent_budget_refuses_a_tools_model_call_and_then_the_run(
    fake_openai: FakeOpenAI,
    tmp_path: Path,
    store_of: Callable[[], Checkpointer],
    seed: int,
    scope: str,
) -> None:
    limit = random.Random(seed).randint(2, 7)
    fake_openai.respond_with(answer)
    scribe = Scribe(Counts(tool=12, streamed=seed % 2 == 1))
    store = store_of()
    oracle = Oracle(
        [scribe], entry_points=False, model=fake_openai.model(), checkpointer=store,
        settings=settings(tmp_path, f"{scope}_day_requests = {limit}"),
    )  # fmt: skip
    thread, user = f"t-{seed}", f"ann-{seed}"
    try:
        result = await oracle.run(thread, "write it down", user_id=user)
        entries = await store.usage()
    finally:
        await oracle.close()

    key = user if scope == "user" else thread
    said = f"budget {scope}_day_requests of {scope} {key!r} is spent: {limit} of {limit} requests"
    # the tool saw the refusal by name after the calls the budget left (the run made one)
    assert len(scribe.refusals) == 1 and said in scribe.refusals[0], scribe.refusals
    tool_results = [e.content for e in result.events if isinstance(e, ToolResultEvent)]
    assert len(tool_results) == 1, tool_results
    assert tool_results[0].startswith(f"made {limit - 1}, refused: {said}"), tool_results
    # and the run stops before its next call, as for a run that spent it alone
    assert result.status == "failed" and said in (result.error or "")
    assert len([e for e in entries if e.kind == "model"]) == limit


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=30) as response:
        body: dict[str, Any] = json.loads(response.read())
        return body


@pytest.mark.parametrize("seed", range(6))
def test_a_routes_model_calls_are_in_the_ledger_and_refused_past_a_budget(
    fake_openai: FakeOpenAI, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    counts = Counts(startup=rng.randint(1, 2), route=rng.randint(1, 3), streamed=seed % 2 == 1)
    asks = rng.randint(1, 3)
    limit = counts.startup + counts.route * asks + rng.randint(0, 2)  # then spent
    fake_openai.respond_with(answer)
    scribe = Scribe(counts)
    oracle = Oracle(
        [scribe], entry_points=False, model=fake_openai.model(),
        checkpointer=SQLiteCheckpointer(tmp_path / "oracle.db"),
        settings=settings(tmp_path, f"user_day_requests = {limit}"),
    )  # fmt: skip
    from oracle_core.server import create_app

    with serve_app(create_app(oracle)) as base:
        said = [_get(f"{base}/plugins/scribe/ask")["said"] for _ in range(asks)]
        left = limit - counts.startup - counts.route * asks
        over = _get(f"{base}/plugins/scribe/ask")["said"]
        health = urllib.request.urlopen(f"{base}/health", timeout=30).status
        listed = _get(f"{base}/usage?by=plugin")

    entries = asyncio.run(SQLiteCheckpointer(tmp_path / "oracle.db").usage())
    assert said == [f"made {counts.route}"] * asks
    refusal = f"budget user_day_requests of user 'default' is spent: {limit} of {limit} requests"
    if left < counts.route:
        assert over.startswith(f"made {left}, refused: {refusal}"), over
    else:
        assert over == f"made {counts.route}"
    assert health == 200
    made = counts.startup + counts.route * asks + min(left, counts.route)
    assert plugin_rows(entries) == Counter({("scribe", "", "", "default", *PLUGIN_USAGE): made})
    shown = {g["key"]: (g["model_calls"], g["total_tokens"], g["runs"]) for g in listed["groups"]}
    assert shown == {"scribe": (made, made * sum(PLUGIN_USAGE), 0)}
