"""Two processes spending from one budget never go over it by more than one model call.

On Postgres and on a shared SQLite file. Each child process is an oracle of its own (its own
store: a pool on the test's Postgres schema, or a connection to the test's SQLite file)
whose model is the fake OpenAI server in this process; both run turns for one user until
the user's day budget stops them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from stores import PgSchema

from oracle_core.store import SQLiteCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest

pytestmark = pytest.mark.slow  # starts processes that import litellm

CALL = (60, 40)  # tokens of every model call: 100
BUDGET = 1000

CHILD = """
import asyncio, json, sys
from oracle_core import Oracle, Settings
from oracle_core.models.litellm import LiteLLMModel
from oracle_core.store import SQLiteCheckpointer
from oracle_core.store.postgres import PostgresCheckpointer

url, schema, model_url, home, name = sys.argv[1:6]
store = PostgresCheckpointer(url, schema=schema) if schema else SQLiteCheckpointer(url)

async def main() -> None:
    oracle = Oracle(
        [], entry_points=False, settings=Settings.from_env({"ORACLE_HOME": home}),
        model=LiteLLMModel("openai/fake-model", api_base=model_url, api_key="sk-fake"),
        checkpointer=store,
    )
    await oracle.start()
    print("ready", flush=True)
    sys.stdin.readline()  # the go
    outcomes = []
    for turn in range(40):
        result = await oracle.run(f"{name}-{turn}", "hi", user_id="ann")
        outcomes.append([result.status, result.error])
        if result.status != "completed":
            break
    await oracle.close()
    print(json.dumps(outcomes), flush=True)

asyncio.run(main())
"""


class InFlight:
    """Answers every model call, counting how many were ever in flight at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.overlap = threading.Event()

    def __call__(self, request: SeenRequest) -> Reply:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            if self.now > 1:
                self.overlap.set()
        # Give a second call the chance to arrive while this one is in flight: were budget
        # calls not one at a time, the two processes would overlap here and `most` show it.
        self.overlap.wait(0.05)
        with self.lock:
            self.now -= 1
        return Reply(content="ok", usage=CALL)


@pytest.mark.parametrize("kind", ["postgres", "sqlite"])
def test_two_processes_sharing_a_budget_go_over_it_by_one_call_at_most(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, fake_openai: FakeOpenAI
) -> None:
    if kind == "postgres":
        schema: PgSchema = request.getfixturevalue("pg_schema")
        where, schema_name = schema.url, schema.name
    else:
        where, schema_name = str(tmp_path / "oracle.db"), ""
    flight = InFlight()
    fake_openai.respond_with(flight)
    children = []
    for name in ("a", "b"):
        home = tmp_path / name
        home.mkdir()
        (home / "oracle.toml").write_text(f"[budgets]\nuser_day_tokens = {BUDGET}\n")
        children.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    CHILD,
                    where,
                    schema_name,
                    fake_openai.url,
                    str(home),
                    name,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            )
        )
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        outcomes = [
            json.loads(child.communicate(timeout=120)[0].splitlines()[-1]) for child in children
        ]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()

    import asyncio

    async def total() -> int:
        store = schema.store() if kind == "postgres" else SQLiteCheckpointer(where)
        try:
            return (await store.spent(since=0.0, user_id="ann")).tokens
        finally:
            await store.close()

    spent = asyncio.run(total())
    assert BUDGET <= spent <= BUDGET + sum(CALL)
    assert flight.most == 1
    for runs in outcomes:
        status, error = runs[-1]
        assert status == "failed" and "budget user_day_tokens of user 'ann' is spent" in error
    assert sum(len(runs) - 1 for runs in outcomes) == len(fake_openai.requests)
