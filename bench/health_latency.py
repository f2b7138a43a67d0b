"""``/health`` latency of a real ``oracle serve`` (SQLite store): idle, under load, lock held.

A real ``oracle serve`` process on 127.0.0.1 (no plugins) talks to the scripted fake OpenAI
server in its own process. ``/health`` is asked N times in a row (default 200) by this
process, each request timed, in three conditions:

- idle: nothing else happens;
- busy: a load process keeps 20 conversations posting runs back to back;
- locked: the same load, while another process holds the SQLite file's write lock
  (``BEGIN IMMEDIATE``), so every run's next save waits for it.

The "runs" column counts the runs the load finished while the condition was measured (none
can save while the lock is held; a few whose answer was already on its way may count). Issue 11 asks that ``/health`` answer within 100 ms.
Every process stops by itself (the load after at most ``--max-seconds``).

Run: ``.venv/bin/python bench/health_latency.py [--requests 200] [--runs 20]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))

from common import ORACLE_SERVE, launch, quantile, serve_env, serve_fake_model, start, stop
from common import table as table_text

# -- the helper processes -----------------------------------------------------------------


def load(url: str, runs: int, progress: Path, max_seconds: float) -> None:
    """Keep ``runs`` conversations posting runs back to back until stdin closes.

    Prints ``ready`` once every conversation has finished a run; keeps the number of
    finished runs in ``progress``; prints a JSON summary at the end.
    """
    stop = threading.Event()

    def watch_stdin() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    counts = {"completed": 0, "failed": 0}

    async def conversation(client: httpx.AsyncClient, index: int, first: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                response = await client.post(
                    f"/threads/load-{index}/runs", json={"message": "What is the answer?"}
                )
                ok = response.status_code == 200 and response.json()["status"] == "completed"
            except httpx.HTTPError:
                ok = False
            counts["completed" if ok else "failed"] += 1
            _write(progress, counts["completed"])  # a few bytes: as good as instant
            first.set()

    async def main() -> None:
        limits = httpx.Limits(max_connections=runs + 5)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
            started = [asyncio.Event() for _ in range(runs)]
            tasks = [asyncio.create_task(conversation(client, i, started[i])) for i in range(runs)]
            await asyncio.gather(*(event.wait() for event in started))
            print("ready", flush=True)
            await asyncio.to_thread(stop.wait, max_seconds)
            stop.set()
            await asyncio.gather(*tasks)

    asyncio.run(main())
    print(json.dumps(counts), flush=True)


def _write(path: Path, count: int) -> None:
    """Write ``count`` to ``path`` atomically: a reader never sees it half written."""
    partial = path.with_suffix(".partial")
    partial.write_text(str(count))
    partial.replace(path)


def lock(db: str) -> None:
    """Hold ``db``'s write lock until stdin closes; print ``locked`` once it is held."""
    connection = sqlite3.connect(db, isolation_level=None, timeout=60)
    connection.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    sys.stdin.read()
    connection.execute("ROLLBACK")
    connection.close()


# -- driving them -------------------------------------------------------------------------


def finish(process: subprocess.Popen[str]) -> str:
    """Close the process's stdin (its signal to stop), wait for it, return what it printed."""
    try:
        output, _ = process.communicate(input="", timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
    return output


@dataclass
class Row:
    """``/health`` latencies measured in one condition."""

    condition: str
    latencies: list[float]
    failures: int
    runs: int

    def cells(self) -> list[str]:
        ordered = sorted(self.latencies)
        p50 = ordered[len(ordered) // 2]
        p99 = quantile(ordered, 0.99)
        return [
            self.condition,
            str(len(ordered)),
            f"{p50 * 1000:.2f}",
            f"{p99 * 1000:.2f}",
            f"{ordered[-1] * 1000:.2f}",
            str(sum(t > 0.1 for t in ordered)),
            str(self.failures),
            str(self.runs),
        ]


def health(url: str, requests: int, condition: str, progress: Path | None) -> Row:
    """Ask ``/health`` ``requests`` times in a row, timing each round trip."""
    before = int(progress.read_text()) if progress else 0
    latencies: list[float] = []
    failures = 0
    with httpx.Client(base_url=url, timeout=60) as client:
        client.get("/health")  # the connection is open before the first timed request
        for _ in range(requests):
            began = time.perf_counter()
            response = client.get("/health")
            latencies.append(time.perf_counter() - began)
            failures += response.status_code != 200
    after = int(progress.read_text()) if progress else 0
    return Row(condition, latencies, failures, after - before)


def table(rows: list[Row]) -> str:
    headers = ["condition", "requests", "p50 ms", "p99 ms", "max ms", ">100 ms", "failed", "runs"]
    return table_text([headers, *(r.cells() for r in rows)])


def measure(args: argparse.Namespace, api_base: str, home: Path) -> tuple[list[Row], str]:
    env = serve_env(api_base, ORACLE_HOME=str(home))
    server, url = start(ORACLE_SERVE, env)
    me = [sys.executable, __file__]
    progress = home / "progress"
    progress.write_text("0")
    rows: list[Row] = []
    summary = ""
    try:
        rows.append(health(url, args.requests, "idle", None))
        print(f"starting {args.runs} busy runs...", file=sys.stderr, flush=True)
        loader, _ = launch(
            [*me, "--role", "load", "--url", url, "--runs", str(args.runs),
             "--progress", str(progress), "--max-seconds", str(args.max_seconds)]
        )  # fmt: skip
        try:
            rows.append(health(url, args.requests, f"{args.runs} runs busy", progress))
            locker, _ = launch([*me, "--role", "lock", "--db", str(home / "oracle.db")])
            try:
                rows.append(
                    health(url, args.requests, f"{args.runs} runs, write lock held", progress)
                )
            finally:
                finish(locker)
        finally:
            summary = finish(loader).strip().splitlines()[-1]
    finally:
        stop(server)
    return rows, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="/health requests per condition")
    parser.add_argument("--runs", type=int, default=20, help="concurrent busy runs")
    parser.add_argument("--max-seconds", type=float, default=120, help=argparse.SUPPRESS)
    parser.add_argument("--role", choices=["fake", "load", "lock"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--progress", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "fake":
        serve_fake_model("The answer is 42.", (50, 5))
        return
    if args.role == "load":
        load(args.url, args.runs, args.progress, args.max_seconds)
        return
    if args.role == "lock":
        lock(args.db)
        return

    fake, api_base = start([sys.executable, __file__, "--role", "fake"])
    try:
        with tempfile.TemporaryDirectory() as home:
            rows, summary = measure(args, api_base, Path(home))
    finally:
        stop(fake)
    print(f"GET /health against oracle serve (SQLite store) on 127.0.0.1, {os.cpu_count()} CPUs")
    print(table(rows))
    print(f"\nruns: runs the load finished while measured; load in all: {summary}")


if __name__ == "__main__":
    main()
