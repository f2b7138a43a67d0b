"""Turns per second and p50/p99 latency of ``oracle serve`` with concurrent threads.

Each of N conversation threads (default 50, all at once) posts T turns one after another
to a real ``oracle serve`` process (SQLite store, no plugins) whose model is the scripted
fake OpenAI server in its own process; beside it, the same load against a bare FastAPI
endpoint that keeps each thread's history in memory and calls the same model through
litellm. The difference is what the oracle costs per turn: persistence, the prompt and
tool list, events, and the HTTP API.

Run: ``.venv/bin/python bench/server_throughput.py [--threads 50] [--turns 10]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

MESSAGE = "What is the answer?"


# -- the processes under test -------------------------------------------------------------


def fake_model() -> None:
    """Serve the scripted model until stdin closes; print its URL first."""
    from oracle_core.testing.openai_server import FakeOpenAI, Reply

    with FakeOpenAI() as fake:
        fake.respond_with(lambda request: Reply(content="The answer is 42.", usage=(50, 5)))
        print(fake.url, flush=True)
        sys.stdin.read()


def bare_server(api_base: str) -> None:
    """A bare FastAPI endpoint calling the same model with litellm; print its URL first."""
    import uvicorn
    from fastapi import FastAPI

    from oracle_core.environment import import_litellm

    litellm = import_litellm()
    app = FastAPI()
    histories: dict[str, list[dict[str, Any]]] = {}

    @app.post("/threads/{thread_id}/runs")
    async def run(thread_id: str, body: dict[str, Any]) -> dict[str, Any]:
        history = histories.setdefault(thread_id, [])
        history.append({"role": "user", "content": body["message"]})
        response = await litellm.acompletion(
            model="openai/fake-model",
            api_base=api_base,
            api_key="sk-fake",
            messages=[{"role": "system", "content": "You are helpful."}, *history],
        )
        answer = response.choices[0].message.content
        history.append({"role": "assistant", "content": answer})
        return {"status": "completed", "answer": answer}

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))

    class Server(uvicorn.Server):
        async def startup(self, *args: Any, **kwargs: Any) -> None:
            await super().startup(*args, **kwargs)
            print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)

    Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


# -- driving them -------------------------------------------------------------------------


def start(args: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start a process that prints a line holding its URL; return it and the URL."""
    process = subprocess.Popen(
        args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.kill()
        raise SystemExit(f"{' '.join(args)} did not start")
    threading.Thread(target=process.stdout.read, daemon=True).start()
    url = next(word for word in line.split() if word.startswith("http://"))
    return process, url


def stop(process: subprocess.Popen[str]) -> None:
    """Stop a process started by :func:`start`."""
    assert process.stdin is not None
    process.stdin.close()
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


@dataclass
class Row:
    """One measured configuration."""

    name: str
    turns: int
    seconds: float
    latencies: list[float]
    failures: int

    def cells(self) -> list[str]:
        ordered = sorted(self.latencies)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return [
            self.name,
            str(self.turns),
            f"{self.turns / self.seconds:.1f}",
            f"{statistics.median(ordered) * 1000:.0f}",
            f"{p99 * 1000:.0f}",
            str(self.failures),
        ]


Turn = Callable[[httpx.AsyncClient, str], Awaitable[bool]]


async def json_turn(client: httpx.AsyncClient, thread: str) -> bool:
    response = await client.post(f"/threads/{thread}/runs", json={"message": MESSAGE})
    return response.status_code == 200 and response.json()["status"] == "completed"


async def sse_turn(client: httpx.AsyncClient, thread: str) -> bool:
    body = {"message": MESSAGE, "stream": True}
    async with client.stream("POST", f"/threads/{thread}/runs", json=body) as response:
        text = "".join([chunk async for chunk in response.aiter_text()])
    return response.status_code == 200 and '"status":"completed"' in text


async def measure(name: str, url: str, turn: Turn, threads: int, turns: int, tag: str) -> Row:
    """Run ``threads`` conversations at once, ``turns`` turns each, timing every turn."""
    limits = httpx.Limits(max_connections=threads + 10, max_keepalive_connections=threads + 10)
    latencies: list[float] = []
    failures = 0
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
        await turn(client, f"warmup-{tag}")  # litellm's import happens on the first call

        async def conversation(index: int) -> None:
            nonlocal failures
            for _ in range(turns):
                began = time.perf_counter()
                try:
                    ok = await turn(client, f"bench-{tag}-{index}")
                except httpx.TransportError as error:
                    print(f"{name}: {type(error).__name__}: {error}", file=sys.stderr)
                    ok = False
                latencies.append(time.perf_counter() - began)
                failures += not ok

        began = time.perf_counter()
        await asyncio.gather(*(conversation(i) for i in range(threads)))
        seconds = time.perf_counter() - began
    return Row(name, threads * turns, seconds, latencies, failures)


def table(rows: list[Row]) -> str:
    headers = ["endpoint", "turns", "turns/s", "p50 ms", "p99 ms", "failed"]
    cells = [headers, *(r.cells() for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=50, help="conversations at once")
    parser.add_argument("--turns", type=int, default=10, help="turns per conversation")
    parser.add_argument("--role", choices=["fake", "bare"], help=argparse.SUPPRESS)
    parser.add_argument("--api-base", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "fake":
        fake_model()
        return
    if args.role == "bare":
        bare_server(args.api_base)
        return

    me = [sys.executable, __file__]
    fake, api_base = start([*me, "--role", "fake"])
    rows: list[Row] = []
    try:
        with tempfile.TemporaryDirectory() as home:
            env = {
                **os.environ,
                "ORACLE_HOME": home,
                "ORACLE_LOAD_PLUGINS": "",
                "ORACLE_MODEL": "openai/fake-model",
                "ORACLE_API_BASE": api_base,
                "OPENAI_API_KEY": "sk-fake",
                "ORACLE_API_TOKEN": "",
            }
            oracle, url = start(
                [
                    sys.executable,
                    "-m",
                    "oracle_core",
                    "serve",
                    "--port",
                    "0",
                    "--log-level",
                    "warning",
                ],
                env,
            )
            try:
                for name, turn, tag in [
                    ("oracle serve, JSON run", json_turn, "json"),
                    ("oracle serve, SSE run", sse_turn, "sse"),
                ]:
                    rows.append(await_row(name, url, turn, args.threads, args.turns, tag))
            finally:
                stop(oracle)
        bare, url = start([*me, "--role", "bare", "--api-base", api_base])
        try:
            rows.append(
                await_row(
                    "bare FastAPI + litellm", url, json_turn, args.threads, args.turns, "bare"
                )
            )
        finally:
            stop(bare)
    finally:
        stop(fake)
    print(
        f"{args.threads} concurrent threads x {args.turns} turns, scripted model over HTTP, {os.cpu_count()} CPUs"
    )
    print(table(rows))


def await_row(name: str, url: str, turn: Turn, threads: int, turns: int, tag: str) -> Row:
    """:func:`measure` in a fresh event loop."""
    return asyncio.run(measure(name, url, turn, threads, turns, tag))


if __name__ == "__main__":
    main()
