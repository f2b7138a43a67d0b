"""The framework's own overhead per model call, with 1, 100 and 1,000 installed plugins.

Each plugin has 4 tools (from Seal-Tools). For each catalog size the script measures:

- start-up: discovering, importing and assembling the plugins;
- per model call, in microseconds: the gate (tool list for the thread), prompt assembly
  (system prompt and messages), schema building (OpenAI tool definitions), token split, and
  the state save (one SQLite step);
- a whole ``Oracle.run`` (one model call that answers) against the fake OpenAI server on
  127.0.0.1, next to a bare ``litellm.acompletion`` to the same server with the same
  messages and tools, and their ratio.

With ``--base TREE`` (e.g. ``git worktree add /tmp/base HEAD``) each size is also measured
with the oracle-core of that tree, marked ``(base)``: every measurement runs in a fresh
process (the script again, with ``PYTHONPATH`` set to the tree for the base), the two trees'
processes taking turns, so a before and after share one run of the machine.

Run: ``.venv/bin/python bench/overhead.py [--runs 60] [--sizes 1,100,1000] [--base TREE]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from catalog import write_catalog

from oracle_core import ModelRequest, Oracle, Settings
from oracle_core.environment import import_litellm
from oracle_core.run.requests import RequestBuilder
from oracle_core.store import SQLiteCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply


def build(
    requests: RequestBuilder, thread: str, messages: list[dict[str, Any]], loaded: list[str]
) -> ModelRequest:
    """The first step's request of a run on ``thread``."""
    return requests.build(
        thread_id=thread, run_id="r", step=1, model="bench", messages=messages, loaded=loaded
    )


def micro(fn: Callable[[], Any], repeat: int = 200) -> float:
    """Median microseconds of ``fn()``."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


async def amicro(fn: Callable[[], Awaitable[Any]], repeat: int) -> float:
    """Median milliseconds of ``await fn()``."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


async def measure(plugins: int, runs: int, server: FakeOpenAI, work: Path) -> dict[str, float]:
    site = work / f"site{plugins}"
    site.mkdir()
    names = write_catalog(site, plugins)
    sys.path.insert(0, str(site))
    start = time.perf_counter()
    oracle = Oracle(
        settings=Settings.from_env({"ORACLE_HOME": str(work)}),
        path=[str(site)],
        model=server.model(num_retries=0),
        checkpointer=SQLiteCheckpointer(work / f"bench{plugins}.db"),
    )
    startup = time.perf_counter() - start
    assert len(oracle.registry) == plugins, oracle.registry.failures[:3]
    loaded = names[:1]  # one plugin loaded in the thread: 2 meta-tools + 4 tool schemas shown
    messages = [{"role": "user", "content": "What is the weather like in Lisbon today?"}]

    # The gate's tool list, computed afresh each time (a new builder has an empty cache).
    gate = micro(lambda: RequestBuilder(oracle.registry, "").tools_for(loaded))
    requests = oracle.requests
    request = build(requests, "t", messages, loaded)
    prompt = micro(lambda: request.openai_messages())
    schemas = micro(lambda: request.openai_tools())
    split = micro(lambda: requests.token_split(request))
    store = oracle.checkpointer
    counter = iter(range(10**9))

    async def save() -> None:
        await store.append(f"save{next(counter)}", base=0, messages=messages, loaded=loaded)

    save_us = await amicro(save, 200) * 1e3

    server.respond_with(lambda _request: Reply.text("It is sunny."))
    await store.append("warm", base=0, loaded=loaded)
    await oracle.run("warm", "warm up")
    threads = iter(range(10**9))

    async def one_run() -> None:
        thread = f"thread{next(threads)}"
        await store.append(thread, base=0, loaded=loaded)
        await oracle.run(thread, "What is the weather like in Lisbon today?")

    run_ms = await amicro(one_run, runs)

    litellm = import_litellm()
    bare_request = build(requests, "bare", messages, loaded)

    async def bare() -> None:
        await litellm.acompletion(
            model=server.model().name,
            messages=bare_request.openai_messages(),
            tools=bare_request.openai_tools(),
            api_base=server.url,
            api_key="sk-fake",
        )

    await bare()
    bare_ms = await amicro(bare, runs)
    await oracle.close()
    return {
        "plugins": plugins,
        "startup_s": startup,
        "gate_us": gate,
        "prompt_us": prompt,
        "schemas_us": schemas,
        "split_us": split,
        "save_us": save_us,
        "run_ms": run_ms,
        "bare_ms": bare_ms,
    }


def in_process(tree: str | None, size: int, runs: int) -> dict[str, float]:
    """One size measured in a fresh process, with the oracle-core of ``tree`` (``None``: the
    installed one)."""
    env = {**os.environ}
    if tree is not None:
        env["PYTHONPATH"] = str(Path(tree).resolve())
    else:
        env.pop("PYTHONPATH", None)
    command = [sys.executable, __file__, "--sizes", str(size), "--runs", str(runs), "--row"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    row: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return row


def table(rows: list[tuple[str, dict[str, float]]]) -> None:
    """Print one line a measurement, ``label`` first."""
    header = (
        f"{'plugins':>15} {'startup s':>10} {'gate us':>8} {'prompt us':>10} {'schemas us':>11} "
        f"{'split us':>9} {'save us':>8} {'run ms':>8} {'bare ms':>8} {'ratio':>6} {'overhead ms':>12}"
    )
    print(header)
    print("-" * len(header))
    for label, r in rows:
        print(
            f"{label:>15} {r['startup_s']:>10.2f} {r['gate_us']:>8.1f} {r['prompt_us']:>10.1f} "
            f"{r['schemas_us']:>11.1f} {r['split_us']:>9.1f} {r['save_us']:>8.1f} {r['run_ms']:>8.2f} "
            f"{r['bare_ms']:>8.2f} {r['run_ms'] / r['bare_ms']:>6.2f} {r['run_ms'] - r['bare_ms']:>12.2f}"
        )
    print(
        "\nrun ms: a whole Oracle.run (one model call, state saved at each step) through litellm to the\n"
        "fake server; bare ms: litellm.acompletion alone with the same messages and tools."
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=60, help="runs per measurement (median reported)"
    )
    parser.add_argument("--sizes", default="1,100,1000", help="catalog sizes")
    parser.add_argument(
        "--base", help="also measure the oracle-core of this tree (a worktree of the commit before)"
    )
    parser.add_argument("--row", action="store_true", help=argparse.SUPPRESS)  # one JSON row
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.base:
        rows: list[tuple[str, dict[str, float]]] = []
        for size in sizes:
            print(f"measuring {size} plugins, both trees...", file=sys.stderr, flush=True)
            rows.append((str(size), in_process(None, size, args.runs)))
            rows.append((f"{size} (base)", in_process(args.base, size, args.runs)))
        table(rows)
        return
    measured = []
    with tempfile.TemporaryDirectory() as folder, FakeOpenAI() as server:
        for size in sizes:
            print(f"measuring {size} plugins...", file=sys.stderr, flush=True)
            measured.append(await measure(size, args.runs, server, Path(folder)))
    if args.row:
        print(json.dumps(measured[-1]))
        return
    table([(str(int(r["plugins"])), r) for r in measured])


if __name__ == "__main__":
    asyncio.run(main())
