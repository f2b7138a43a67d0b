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

Then, apart from those rows, a process is killed mid-run (docs/scale-out.md, "Runs that
outlive their process"): two more ``oracle serve`` processes on a Postgres schema of their
own, with a short lease (``--lease-ttl``, 3 s) and a slow model (``--model-delay`` seconds a
reply, its own fake server); the N threads post one turn each, a few at a time (thread i to
process i mod 2), and once half the runs have started one process gets SIGKILL. The
clients that posted to it lose their connection, later posts go to the survivor (as a load
balancer would), and the survivor's sweeper resumes the cut-off runs. The answers are read
from the store, polled until no run is running: every thread must end with exactly one
answer. Printed: the runs, those completed, those resumed, lost writes, double answers, and
the seconds from the kill to the first and to the last resumed answer.

Run: ``.venv/bin/python bench/scale_out.py [--threads 50] [--rounds 3] [--turns 4]
[--model-delay 2] [--lease-ttl 3] [--only throughput|crash]
[--database-url postgresql://postgres@127.0.0.1:5432/test]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
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
from oracle_core.testing.openai_server import FakeOpenAI, Reply

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


# -- a process killed mid-run -------------------------------------------------------------


def serve_slow_model(delay: float) -> None:
    """Serve a fake OpenAI model answering after ``delay`` seconds until stdin closes."""

    def slowly(request: object) -> Reply:
        time.sleep(delay)
        return Reply(content=ANSWER, usage=(50, 5))

    with FakeOpenAI() as fake:
        fake.respond_with(slowly)
        # the killed process drops its calls: a broken pipe here is expected, not news
        fake._server.handle_error = lambda request, address: None  # type: ignore[union-attr,method-assign]
        print(fake.url, flush=True)
        sys.stdin.read()


@dataclass
class Crash:
    """What the round with a process killed mid-run found."""

    threads: int
    started_at_kill: int = 0
    running_at_kill: int = 0
    cut_clients: int = 0
    moved: int = 0
    runs: int = 0
    completed: int = 0
    resumed: int = 0
    lost: int = 0
    doubled: int = 0
    one_answer: int = 0
    ended: dict[str, float] = field(default_factory=dict)
    to_resumed: float | None = None
    to_first: float | None = None
    to_last: float | None = None
    waited: float = 0.0


def run_statuses(db_url: str) -> dict[str, list[str]]:
    """The status of each run of the ``crash-*`` threads, by thread."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT t.thread_id, r.status FROM oracle_runs r JOIN oracle_threads t"
            " USING (thread_key) WHERE t.thread_id LIKE 'crash-%'"
        ).fetchall()
    statuses: dict[str, list[str]] = {}
    for thread, status in rows:
        statuses.setdefault(thread, []).append(status)
    return statuses


def counted(statuses: dict[str, list[str]]) -> tuple[int, int]:
    """The runs, and those of them still ``running``."""
    every = [status for each in statuses.values() for status in each]
    return len(every), every.count("running")


async def crash_round(
    urls: list[str], victim: subprocess.Popen[str], db_url: str, crash: Crash, spacing: float
) -> float:
    """Post one turn per thread, ``spacing`` s apart; SIGKILL ``victim`` (serving ``urls[1]``)
    once half the runs have started, then poll the store every 0.1 s, noting when each
    thread's runs ended, until every post returned and no run is running.

    Returns:
        The time of the kill (Unix seconds).
    """
    threads = crash.threads
    limits = httpx.Limits(max_connections=threads + 10, max_keepalive_connections=threads + 10)
    clients = [httpx.AsyncClient(base_url=u, limits=limits, timeout=120) for u in urls]
    killed = asyncio.Event()
    killed_at = 0.0
    returned = 0
    try:

        async def post(index: int) -> None:
            nonlocal returned
            await asyncio.sleep(index * spacing)
            target = index % 2
            if target == 1 and killed.is_set():  # the balancer knows it is down
                target, crash.moved = 0, crash.moved + 1
            try:
                await clients[target].post(f"/threads/crash-{index}/runs",
                                           json={"message": MESSAGE})  # fmt: skip
            except httpx.ConnectError:  # nothing was sent: safe to send to the survivor
                crash.moved += 1
                await clients[0].post(f"/threads/crash-{index}/runs", json={"message": MESSAGE})
            except httpx.TransportError:  # cut off mid-answer: the store will tell
                crash.cut_clients += 1
            finally:
                returned += 1

        async def kill_and_watch() -> None:
            nonlocal killed_at
            while True:  # poll the store until half the runs have started
                started, _ = counted(await asyncio.to_thread(run_statuses, db_url))
                if started >= threads // 2:
                    break
                await asyncio.sleep(0.02)
            victim.send_signal(signal.SIGKILL)
            victim.wait(30)
            killed_at = time.time()
            killed.set()
            statuses = await asyncio.to_thread(run_statuses, db_url)
            crash.started_at_kill, crash.running_at_kill = counted(statuses)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                now = time.time()
                for thread, each in statuses.items():
                    if "running" not in each:
                        crash.ended.setdefault(thread, now - killed_at)
                if returned == threads and not counted(statuses)[1]:
                    break
                await asyncio.sleep(0.1)
                statuses = await asyncio.to_thread(run_statuses, db_url)
            crash.waited = time.time() - killed_at

        await asyncio.gather(kill_and_watch(), *(post(i) for i in range(threads)))
    finally:
        for client in clients:
            await client.aclose()
    return killed_at


async def crash_audit(store: Checkpointer, crash: Crash, killed_at: float) -> None:
    """Read every thread back: its one message, its one answer, its run (resumed or not)."""
    answered: list[float] = []
    resumed_at: list[float] = []
    try:
        for index in range(crash.threads):
            state = await store.load(f"crash-{index}")
            asked = sum(1 for m in state.messages if m["role"] == "user")
            answers = sum(1 for m in state.messages if m["role"] == "assistant")
            crash.lost += (asked == 0) + (answers == 0)
            crash.doubled += max(0, asked - 1) + max(0, answers - 1)
            crash.one_answer += asked == 1 and answers == 1
            crash.runs += len(state.runs)
            for run in state.runs:
                crash.completed += run.status == "completed"
                if run.resumed >= 1:
                    crash.resumed += 1
                    if run.resumed_at is not None:
                        resumed_at.append(run.resumed_at - killed_at)
                    if run.status == "completed" and state.thread_id in crash.ended:
                        answered.append(crash.ended[state.thread_id])
    finally:
        await store.close()
    if resumed_at:
        crash.to_resumed = min(resumed_at)
    if answered:
        crash.to_first, crash.to_last = min(answered), max(answered)


def crash_table(crash: Crash) -> str:
    headers = ["Postgres, 2 processes, 1 killed", "runs", "completed", "resumed", "lost writes",
               "double answers", "kill to 1st resume s", "kill to 1st resumed answer s",
               "kill to last resumed answer s"]  # fmt: skip
    times = (crash.to_resumed, crash.to_first, crash.to_last)
    seconds = [f"{x:.1f}" if x is not None else "-" for x in times]
    row = [f"{crash.threads} threads, one turn each", str(crash.runs), str(crash.completed),
           str(crash.resumed), str(crash.lost), str(crash.doubled), *seconds]  # fmt: skip
    return table_text([headers, row], numbers_right=False, rule=False)


def run_crash(args: argparse.Namespace, home: str, schemas: list[str]) -> Crash:
    """Start a slow model and two processes on a fresh schema; kill one mid-run; audit."""
    processes = []
    crash = Crash(args.threads)
    try:
        fake, api_base = start([sys.executable, __file__, "--role", "slow-fake",
                                "--model-delay", str(args.model_delay)])  # fmt: skip
        processes.append(fake)
        schema = f"bench_{uuid.uuid4().hex[:10]}"
        schemas.append(schema)
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
        db_url = f"{args.database_url}?options=-csearch_path%3D{schema}"
        env = serve_env(api_base, ORACLE_DATABASE_URL=db_url, ORACLE_LEASE_TTL=str(args.lease_ttl))
        urls = []
        for index in range(2):
            process, url = start(ORACLE_SERVE, {**env, "ORACLE_HOME": f"{home}/crash-{index}"})
            processes.append(process)
            urls.append(url)
        warm = Setup("warm", urls, None)  # imports and first connections, unmeasured
        asyncio.run(one_round(warm, 2, 2, offset=10_000))
        print("a process killed mid-run...", file=sys.stderr, flush=True)
        # the posts span twice the model's delay: half are in flight when the kill comes
        spacing = 2 * args.model_delay / args.threads
        killed_at = asyncio.run(crash_round(urls, processes[2], db_url, crash, spacing))
        store = PostgresCheckpointer(args.database_url, schema=schema)
        asyncio.run(crash_audit(store, crash, killed_at))
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                stop(process)
    return crash


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=50, help="conversations at once")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--turns", type=int, default=4, help="turns per conversation per round")
    parser.add_argument("--model-delay", type=float, default=2.0,
                        help="seconds the model takes a reply, in the round with a kill")  # fmt: skip
    parser.add_argument("--lease-ttl", type=float, default=3.0,
                        help="ORACLE_LEASE_TTL of the processes in the round with a kill")  # fmt: skip
    parser.add_argument("--only", choices=["throughput", "crash"], help="run one part only")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--role", choices=["slow-fake"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "slow-fake":
        serve_slow_model(args.model_delay)
        return

    setups: list[Setup] = []
    crash: Crash | None = None
    schemas: list[str] = []
    try:
        with tempfile.TemporaryDirectory() as home:
            if args.only != "crash":
                setups = run_throughput(args, home, schemas)
            if args.only != "throughput":
                crash = run_crash(args, home, schemas)
    finally:
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            for schema in schemas:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")  # type: ignore[arg-type]
    if setups:
        print(
            f"{args.threads} concurrent threads, {args.rounds} interleaved rounds of {args.turns} "
            "turns, each thread's turns round-robin over the processes; scripted model in its "
            f"own process; {os.cpu_count()} CPUs shared by every process and Postgres; turns/s "
            "is the median over the rounds"
        )
        print(table(setups))
    if crash is not None:
        if setups:
            print()
        print(
            f"{crash.threads} threads, one turn each, posted over {2 * args.model_delay:g} s "
            f"to 2 processes on Postgres (ORACLE_LEASE_TTL={args.lease_ttl:g} "
            f"s: sweeps every {args.lease_ttl / 2:g} s); model replies after "
            f"{args.model_delay:g} s; SIGKILL to one once {crash.started_at_kill} runs had "
            f"started ({crash.running_at_kill} running); {crash.cut_clients} clients cut off, "
            f"{crash.moved} later posts sent to the survivor; answers read from the store, "
            "polled every 0.1 s (an answer's time: when its run was seen ended); all "
            f"runs ended {crash.waited:.1f} s after the kill; {crash.one_answer} of "
            f"{crash.threads} threads end with exactly one answer"
        )
        print(crash_table(crash))


def run_throughput(args: argparse.Namespace, home: str, schemas: list[str]) -> list[Setup]:
    """The rows of turns/s: SQLite, and Postgres with 1, 2 and 3 processes; audited."""
    bench = str(Path(__file__).with_name("server_throughput.py"))
    processes = []
    fake, api_base = start([sys.executable, bench, "--role", "fake"])
    processes.append(fake)
    setups: list[Setup] = []
    try:
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
    return setups


if __name__ == "__main__":
    main()
