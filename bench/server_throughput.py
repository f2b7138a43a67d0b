"""Turns per second, CPU per turn and p50/p99 latency of ``oracle serve`` beside bare twins.

N conversation threads (default 50, all at once) post turns to each contender; the model is
the scripted fake OpenAI server in its own process (keep-alive, streaming included). The
contenders run side by side and are measured in interleaved rounds (A B C D, A B C D, ...),
so a slower or faster moment of this shared machine falls on all of them alike; every round
continues the same threads, so they grow (``--rounds`` x ``--turns`` turns each, two
messages a turn). Contenders:

- ``oracle serve`` (SQLite store, no plugins), a JSON run and an SSE run;
- a bare FastAPI endpoint that keeps each thread's history in memory and calls the same
  model with the openai SDK, answering JSON, and its streaming twin answering SSE;
- the same bare endpoint calling the model through litellm.

CPU per turn is the serving process's own user+system time over the round, divided by the
turns it served (read from ``/proc``): what the server spends, whatever the client does.

Run: ``.venv/bin/python bench/server_throughput.py [--threads 50] [--rounds 6] [--turns 4]``
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from common import (
    ORACLE_SERVE,
    cpu_seconds,
    quantile,
    serve_env,
    serve_fake_model,
    start,
    stop,
)
from common import table as table_text

MESSAGE = "What is the answer?"
SYSTEM = {"role": "system", "content": "You are helpful."}


# -- the processes under test -------------------------------------------------------------


def bare_server(api_base: str, client: str) -> None:
    """A bare FastAPI endpoint calling the model with ``client``; print its URL first."""
    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import StreamingResponse

    complete = _completer(api_base, client)
    app = FastAPI()
    histories: dict[str, list[dict[str, Any]]] = {}

    @app.post("/threads/{thread_id}/runs", response_model=None)
    async def run(thread_id: str, body: dict[str, Any]) -> dict[str, Any] | StreamingResponse:
        history = histories.setdefault(thread_id, [])
        history.append({"role": "user", "content": body["message"]})
        if not body.get("stream"):
            answer = "".join([piece async for piece in complete([SYSTEM, *history], False)])
            history.append({"role": "assistant", "content": answer})
            return {"status": "completed", "answer": answer}

        async def events() -> AsyncIterator[str]:
            pieces = []
            async for piece in complete([SYSTEM, *history], True):
                pieces.append(piece)
                yield f"data: {_compact({'type': 'text_delta', 'text': piece})}\n\n"
            history.append({"role": "assistant", "content": "".join(pieces)})
            yield f"data: {_compact({'type': 'done', 'status': 'completed'})}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))

    class Server(uvicorn.Server):
        async def startup(self, *args: Any, **kwargs: Any) -> None:
            await super().startup(*args, **kwargs)
            print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)

    Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _completer(
    api_base: str, client: str
) -> Callable[[list[dict[str, Any]], bool], AsyncIterator[str]]:
    """An async generator of the answer's text, through the openai SDK or litellm."""
    if client == "openai":
        from openai import AsyncOpenAI

        sdk = AsyncOpenAI(base_url=api_base, api_key="sk-fake", max_retries=2)

        async def openai_complete(
            messages: list[dict[str, Any]], stream: bool
        ) -> AsyncIterator[str]:
            if not stream:
                response = await sdk.chat.completions.create(model="fake-model", messages=messages)  # type: ignore[arg-type]
                yield response.choices[0].message.content or ""
                return
            chunks = await sdk.chat.completions.create(
                model="fake-model", messages=messages, stream=True,  # type: ignore[arg-type]
                stream_options={"include_usage": True},
            )  # fmt: skip
            async for chunk in chunks:
                if chunk.choices and chunk.choices[0].delta.content:
                    yield chunk.choices[0].delta.content

        return openai_complete
    from oracle_core.environment import import_litellm

    litellm = import_litellm()

    async def litellm_complete(messages: list[dict[str, Any]], stream: bool) -> AsyncIterator[str]:
        response = await litellm.acompletion(
            model="openai/fake-model", api_base=api_base, api_key="sk-fake", messages=messages
        )
        yield response.choices[0].message.content or ""

    return litellm_complete


# -- driving them -------------------------------------------------------------------------


Turn = Callable[[httpx.AsyncClient, str], Awaitable[bool]]


async def json_turn(client: httpx.AsyncClient, thread: str) -> bool:
    response = await client.post(f"/threads/{thread}/runs", json={"message": MESSAGE})
    return response.status_code == 200 and response.json()["status"] == "completed"


async def sse_turn(client: httpx.AsyncClient, thread: str) -> bool:
    body = {"message": MESSAGE, "stream": True}
    async with client.stream("POST", f"/threads/{thread}/runs", json=body) as response:
        text = "".join([chunk async for chunk in response.aiter_text()])
    return response.status_code == 200 and '"status":"completed"' in text


@dataclass
class Contender:
    """One endpoint measured, and what its rounds found."""

    name: str
    url: str
    pid: int
    turn: Turn
    tag: str
    rates: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    turns: int = 0


async def one_round(contender: Contender, threads: int, turns: int) -> None:
    """``threads`` conversations at once, ``turns`` turns each, on the same threads as before."""
    limits = httpx.Limits(max_connections=threads + 10, max_keepalive_connections=threads + 10)
    async with httpx.AsyncClient(base_url=contender.url, limits=limits, timeout=120) as client:

        async def conversation(index: int) -> None:
            for _ in range(turns):
                began = time.perf_counter()
                try:
                    ok = await contender.turn(client, f"bench-{contender.tag}-{index}")
                except httpx.TransportError as error:
                    print(f"{contender.name}: {type(error).__name__}: {error}", file=sys.stderr)
                    ok = False
                contender.latencies.append(time.perf_counter() - began)
                contender.failures += not ok

        cpu = cpu_seconds(contender.pid)
        began = time.perf_counter()
        await asyncio.gather(*(conversation(i) for i in range(threads)))
        seconds = time.perf_counter() - began
        served = threads * turns
        contender.turns += served
        contender.rates.append(served / seconds)
        contender.cpu_ms.append((cpu_seconds(contender.pid) - cpu) / served * 1e3)


def table(contenders: list[Contender], twins: dict[str, str]) -> str:
    by_name = {c.name: c for c in contenders}
    headers = [
        "endpoint",
        "turns",
        "turns/s",
        "CPU ms/turn",
        "p50 ms",
        "p99 ms",
        "failed",
        "vs twin",
    ]
    rows = [headers]
    for c in contenders:
        ordered = sorted(c.latencies)
        p99 = quantile(ordered, 0.99)
        rate = statistics.median(c.rates)
        twin = by_name.get(twins.get(c.name, ""))
        ratio = f"{rate / statistics.median(twin.rates):.2f}x" if twin else ""
        rows.append([
            c.name, str(c.turns), f"{rate:.1f}", f"{statistics.median(c.cpu_ms):.2f}",
            f"{statistics.median(ordered) * 1e3:.0f}", f"{p99 * 1e3:.0f}", str(c.failures), ratio,
        ])  # fmt: skip
    return table_text(rows, numbers_right=False, rule=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=50, help="conversations at once")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds")
    parser.add_argument("--turns", type=int, default=4, help="turns per conversation per round")
    parser.add_argument("--role", choices=["fake", "bare"], help=argparse.SUPPRESS)
    parser.add_argument("--api-base", help=argparse.SUPPRESS)
    parser.add_argument("--client", choices=["openai", "litellm"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "fake":
        serve_fake_model("The answer is 42.", (50, 5))
        return
    if args.role == "bare":
        bare_server(args.api_base, args.client)
        return

    me = [sys.executable, __file__]
    processes: list[subprocess.Popen[str]] = []
    fake, api_base = start([*me, "--role", "fake"])
    processes.append(fake)
    try:
        with tempfile.TemporaryDirectory() as home:
            env = serve_env(api_base, ORACLE_HOME=home)
            oracle, oracle_url = start(ORACLE_SERVE, env)
            processes.append(oracle)
            bare_openai, openai_url = start(
                [*me, "--role", "bare", "--api-base", api_base, "--client", "openai"]
            )
            bare_litellm, litellm_url = start(
                [*me, "--role", "bare", "--api-base", api_base, "--client", "litellm"]
            )
            processes += [bare_openai, bare_litellm]
            contenders = [
                Contender("oracle serve, JSON", oracle_url, oracle.pid, json_turn, "json"),
                Contender("oracle serve, SSE", oracle_url, oracle.pid, sse_turn, "sse"),
                Contender("bare FastAPI + openai SDK, JSON", openai_url, bare_openai.pid, json_turn, "json"),
                Contender("bare FastAPI + openai SDK, SSE", openai_url, bare_openai.pid, sse_turn, "sse"),
                Contender("bare FastAPI + litellm, JSON", litellm_url, bare_litellm.pid, json_turn, "json"),
            ]  # fmt: skip
            for contender in contenders:  # warm up: imports and first connections, unmeasured
                asyncio.run(one_round(dataclasses.replace(contender, tag="warm", rates=[],
                                      cpu_ms=[], latencies=[], failures=0, turns=0), 2, 1))  # fmt: skip
            for index in range(args.rounds):
                print(f"round {index + 1} of {args.rounds}...", file=sys.stderr, flush=True)
                for contender in contenders:
                    asyncio.run(one_round(contender, args.threads, args.turns))
    finally:
        for process in reversed(processes):
            stop(process)
    messages = 2 * args.rounds * args.turns
    print(
        f"{args.threads} concurrent threads, {args.rounds} interleaved rounds of {args.turns} "
        f"turns (threads end with {messages} messages), scripted model in its own process, "
        f"{os.cpu_count()} CPUs; turns/s and CPU are medians over the rounds"
    )
    twins = {
        "oracle serve, JSON": "bare FastAPI + openai SDK, JSON",
        "oracle serve, SSE": "bare FastAPI + openai SDK, SSE",
        "bare FastAPI + litellm, JSON": "bare FastAPI + openai SDK, JSON",
    }
    print(table(contenders, twins))


if __name__ == "__main__":
    main()
