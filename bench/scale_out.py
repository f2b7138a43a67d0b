"""Turns per second and p50/p99 latency with 1, 2 and 3 ``oracle serve`` processes on one Postgres.

N conversation threads (default 50, all at once) post turns through a round-robin "load
balancer": turn k of thread i goes to process (i + k) mod P, so every thread moves between
processes turn after turn and every promise of the store is exercised across them (the
lease, the append-only log, the tail cache checked against the store). Beside them, one
process on SQLite, the embedded default. The model is the scripted fake OpenAI server in its
own process (``bench/server_throughput.py``'s, reused with its helpers).

After the rounds, every thread is read back from the store: a turn whose user message or
answer is missing is a **lost write**, one whose message or answer is there twice a
**double execution**; both must be 0.

Run: ``.venv/bin/python bench/scale_out.py [--threads 50] [--rounds 3] [--turns 4]
[--database-url postgresql://postgres@127.0.0.1:5432/test]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).parent))
from common import ORACLE_SERVE, quantile, serve_env, start, stop
from common import table as table_text
from server_throughput import MESSAGE

from oracle_core.store import Checkpointer, SQLiteCheckpointer
from oracle_core.store.postgres import PostgresCheckpointer

ANSWER = "The answer is 42."


@dataclass
class Setup:
    """One store and a number of processes serving it, and what its rounds found."""

    name: str
    urls: list[str]
    open_store: object
    rates: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    turns: int = 0
    lost: int = 0
    doubled: int = 0


async def one_round(setup: Setup, threads: int, turns: int, offset: int) -> None:
    """``threads`` conversations at once, ``turns`` turns each, round-robin over the processes."""
    limits = httpx.Limits(max_connections=threads + 10, max_keepalive_connections=threads + 10)
    clients = [httpx.AsyncClient(base_url=u, limits=limits, timeout=120) for u in setup.urls]
    try:

        async def conversation(index: int) -> None:
            for turn in range(turns):
                client = clients[(index + offset + turn) % len(clients)]
                message = f"{MESSAGE} #{offset + turn}"
                began = time.perf_counter()
                try:
                    response = await client.post(
                        f"/threads/scale-{index}/runs", json={"message": message}
                    )
                    ok = response.status_code == 200 and response.json()["status"] == "completed"
                    if not ok:
                        print(f"{setup.name}: {response.status_code} {response.text[:200]}",
                              file=sys.stderr)  # fmt: skip
                except httpx.TransportError as error:
                    print(f"{setup.name}: {type(error).__name__}: {error}", file=sys.stderr)
                    ok = False
                setup.latencies.append(time.perf_counter() - began)
                setup.failures += not ok

        began = time.perf_counter()
        await asyncio.gather(*(conversation(i) for i in range(threads)))
        seconds = time.perf_counter() - began
    finally:
        for client in clients:
            await client.aclose()
    setup.turns += threads * turns
    setup.rates.append(threads * turns / seconds)


async def audit(store: Checkpointer, setup: Setup, threads: int, total: int) -> None:
    """Count lost writes and double executions: every turn once, each answered once."""
    try:
        for index in range(threads):
            state = await store.load(f"scale-{index}")
            asked = Counter(m["content"] for m in state.messages if m["role"] == "user")
            answers = sum(1 for m in state.messages if m["role"] == "assistant")
            expected = {f"{MESSAGE} #{n}" for n in range(total)}
            setup.lost += sum(1 for text in expected if asked[text] == 0)
            setup.doubled += sum(count - 1 for count in asked.values() if count > 1)
            setup.lost += max(0, len(asked) - answers)
            setup.doubled += max(0, answers - sum(asked.values()))
    finally:
        await store.close()


def table(setups: list[Setup]) -> str:
    headers = ["store, processes", "turns", "turns/s", "vs 1 proc", "p50 ms", "p99 ms", "failed",
               "lost writes", "double exec"]  # fmt: skip
    rows = [headers]
    single = next((s for s in setups if s.name == "Postgres, 1 process"), None)
    for s in setups:
        ordered = sorted(s.latencies)
        p99 = quantile(ordered, 0.99)
        rate = statistics.median(s.rates)
        ratio = (
            f"{rate / statistics.median(single.rates):.2f}x"
            if single and "Postgres" in s.name
            else ""
        )
        rows.append([s.name, str(s.turns), f"{rate:.1f}", ratio,
                     f"{statistics.median(ordered) * 1e3:.0f}", f"{p99 * 1e3:.0f}", str(s.failures),
                     str(s.lost), str(s.doubled)])  # fmt: skip
    return table_text(rows, numbers_right=False, rule=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=50, help="conversations at once")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--turns", type=int, default=4, help="turns per conversation per round")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()

    bench = str(Path(__file__).with_name("server_throughput.py"))
    processes = []
    schemas: list[str] = []
    fake, api_base = start([sys.executable, bench, "--role", "fake"])
    processes.append(fake)
    setups: list[Setup] = []
    try:
        with tempfile.TemporaryDirectory() as home:
            env = serve_env(api_base)
            serve = ORACLE_SERVE

            sqlite_home = Path(home) / "sqlite"
            process, url = start(serve, {**env, "ORACLE_HOME": str(sqlite_home)})
            processes.append(process)
            setups.append(Setup("SQLite, 1 process", [url], sqlite_home / "oracle.db"))
            for count in (1, 2, 3):
                schema = f"bench_{uuid.uuid4().hex[:10]}"
                schemas.append(schema)
                with psycopg.connect(args.database_url, autocommit=True) as conn:
                    conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
                db_url = f"{args.database_url}?options=-csearch_path%3D{schema}"
                urls = []
                for index in range(count):
                    process, url = start(serve, {**env, "ORACLE_HOME": f"{home}/pg{count}-{index}",
                                                 "ORACLE_DATABASE_URL": db_url})  # fmt: skip
                    processes.append(process)
                    urls.append(url)
                name = f"Postgres, {count} process{'es' if count > 1 else ''}"
                setups.append(Setup(name, urls, schema))
            for setup in setups:  # warm up: imports and first connections, unmeasured
                warm = Setup("warm", setup.urls, None)
                asyncio.run(one_round(warm, 2, len(setup.urls), offset=10_000))
            for number in range(args.rounds):
                print(f"round {number + 1} of {args.rounds}...", file=sys.stderr, flush=True)
                for setup in setups:
                    asyncio.run(one_round(setup, args.threads, args.turns, number * args.turns))
            total = args.rounds * args.turns
            for setup in setups:
                target = setup.open_store
                store: Checkpointer = (
                    SQLiteCheckpointer(target) if isinstance(target, Path)
                    else PostgresCheckpointer(args.database_url, schema=str(target))
                )  # fmt: skip
                asyncio.run(audit(store, setup, args.threads, total))
    finally:
        for process in reversed(processes):
            stop(process)
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            for schema in schemas:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")  # type: ignore[arg-type]
    print(
        f"{args.threads} concurrent threads, {args.rounds} interleaved rounds of {args.turns} "
        "turns, each thread's turns round-robin over the processes; scripted model in its own "
        f"process; {os.cpu_count()} CPUs shared by every process and Postgres; turns/s is the "
        "median over the rounds"
    )
    print(table(setups))


if __name__ == "__main__":
    main()
