"""One agent run, side by side: oracle-core, pydantic-ai, LangChain, bare litellm, bare openai SDK.

Every contender answers the same question once against the same fixed-reply fake OpenAI
server, which runs in its own process (so its CPU is not charged to the caller) and answers
with text at once (one model call per run, no tool call). Contenders:

- oracle-core with 1, 100 and 1,000 installed plugins of 4 tools each (catalogs from
  ``bench/catalog.py``, imported and assembled before timing), a fresh thread per run, the
  in-memory store; its tools reach the model through the capability gate (the meta-tools),
  whatever the catalog size. The ``openai/`` model goes through the direct path; one more row
  forces litellm (``ORACLE_MODEL_CLIENT=litellm``) at 100 plugins;
- pydantic-ai ``Agent`` and LangChain ``create_agent`` with 4, 400 and 4,000 tools (the same
  Seal-Tools schemas), each sent with every call, as those frameworks do;
- a bare ``litellm.acompletion`` and a bare openai SDK call with the system prompt and the
  question, no tools: what the wire costs.

Contenders are interleaved in blocks (the order rotated every round); each block records the
CPU of the whole process per run (``time.process_time``) and the wall time of each run. The
table shows medians and ratios to the bare openai SDK. A peer that is not installed is left
out with a note: ``pip install -e '.[peers]'`` installs them.

Run: ``.venv/bin/python bench/peers.py [--rounds 8] [--block 5] [--sizes 1,100,1000]``
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from catalog import load_tools, write_catalog
from common import table as table_text
from model_path import ANSWER, fake_process

SYSTEM = "You are a helpful assistant. Answer briefly."
QUESTION = "What is the answer to everything?"
JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}

Run = Callable[[], Awaitable[str]]
"""One agent run; returns the answer's text."""


@dataclass
class Row:
    """A contender and what it measured."""

    name: str
    run: Run
    cpu_per_run: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)


# -- tools for the peers -------------------------------------------------------------------


def tool_specs(count: int) -> list[tuple[str, str, dict[str, Any]]]:
    """``count`` Seal-Tools tools as (name, description, JSON schema of the arguments)."""
    specs = []
    pool = load_tools()
    for index, spec in zip(range(count), itertools.cycle(pool), strict=False):
        properties = {
            key: {
                "type": JSON_TYPES.get(str(info.get("type", "str")).lower(), "string"),
                "description": str(info.get("description", "")),
            }
            for key, info in (spec.get("parameters") or {}).items()
            if key.isidentifier()
        }
        required = [key for key in spec.get("required") or [] if key in properties]
        schema = {"type": "object", "properties": properties, "required": required}
        name = f"{''.join(c if c.isalnum() else '_' for c in spec['api_name'])[:40]}_{index}"
        specs.append((name, str(spec.get("api_description", name))[:500], schema))
    return specs


def _tool_function(**arguments: Any) -> str:
    return "done"


# -- contenders ------------------------------------------------------------------------------


def bare_rows(url: str) -> list[Row]:
    """The bare openai SDK and bare litellm calls."""
    from openai import AsyncOpenAI

    from oracle_core.environment import import_litellm

    litellm = import_litellm()
    client = AsyncOpenAI(base_url=url, api_key="sk-fake")
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]

    async def sdk() -> str:
        response = await client.chat.completions.create(model="fake-model", messages=messages)  # type: ignore[arg-type]
        return response.choices[0].message.content or ""

    async def bare_litellm() -> str:
        response = await litellm.acompletion(
            model="openai/fake-model", api_base=url, api_key="sk-fake", messages=messages
        )
        return str(response.choices[0].message.content)

    return [Row("bare openai SDK", sdk), Row("bare litellm.acompletion", bare_litellm)]


def oracle_rows(url: str, sizes: list[int], work: Path) -> list[Row]:
    """oracle-core with each catalog size (plus one forced through litellm)."""
    from oracle_core import Oracle, Settings
    from oracle_core.store import MemoryCheckpointer

    rows = []
    counter = itertools.count()
    forced_at = 100 if 100 in sizes else sizes[0]
    for size, client in [(s, "auto") for s in sizes] + [(forced_at, "litellm")]:
        site = work / f"site{size}"
        if not site.exists():
            site.mkdir()
            write_catalog(site, size)
        sys.path.insert(0, str(site))
        env = {
            "ORACLE_HOME": str(work),
            "ORACLE_MODEL": "openai/fake-model",
            "ORACLE_API_BASE": url,
            "ORACLE_MODEL_CLIENT": client,
        }
        oracle = Oracle(
            settings=Settings.from_env(env), path=[str(site)], checkpointer=MemoryCheckpointer()
        )
        if len(oracle.registry) != size:
            raise SystemExit(f"catalog of {size}: {oracle.registry.failures[:3]}")

        async def run(oracle: Oracle = oracle) -> str:
            result = await oracle.run(f"thread-{next(counter)}", QUESTION)
            return str(result.answer)

        path = "litellm" if client == "litellm" else type(oracle.model).__name__
        rows.append(Row(f"oracle-core, {size} plugins x 4 tools ({path})", run))
    return rows


def pydantic_ai_rows(url: str, sizes: list[int]) -> list[Row]:
    """pydantic-ai agents with 4 tools per plugin of each catalog size."""
    from pydantic_ai import Agent, Tool
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=url, api_key="sk-fake"))
    rows = []
    for size in sizes:
        tools = [
            Tool.from_schema(_tool_function, name=name, description=text, json_schema=schema)
            for name, text, schema in tool_specs(4 * size)
        ]
        agent = Agent(model, instructions=SYSTEM, tools=tools)

        async def run(agent: Any = agent) -> str:
            return str((await agent.run(QUESTION)).output)

        rows.append(Row(f"pydantic-ai Agent, {4 * size} tools", run))
    return rows


def langchain_rows(url: str, sizes: list[int]) -> list[Row]:
    """LangChain ``create_agent`` agents with 4 tools per plugin of each catalog size."""
    from langchain.agents import create_agent
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="fake-model", base_url=url, api_key="sk-fake")  # type: ignore[arg-type]
    rows = []
    for size in sizes:
        tools = [
            StructuredTool.from_function(
                _tool_function, name=name, description=text, args_schema=schema
            )
            for name, text, schema in tool_specs(4 * size)
        ]
        agent = create_agent(model, tools=tools, system_prompt=SYSTEM)

        async def run(agent: Any = agent) -> str:
            state = await agent.ainvoke({"messages": [{"role": "user", "content": QUESTION}]})
            return str(state["messages"][-1].content)

        rows.append(Row(f"LangChain create_agent, {4 * size} tools", run))
    return rows


def peers(url: str, sizes: list[int]) -> tuple[list[Row], list[str]]:
    """The optional peers that are installed, and a note for each one that is not."""
    rows: list[Row] = []
    notes: list[str] = []
    for name, make, package in [
        ("pydantic-ai", pydantic_ai_rows, "pydantic-ai-slim[openai]"),
        ("LangChain", langchain_rows, "langchain langchain-openai"),
    ]:
        try:
            rows += make(url, sizes)
        except ImportError as error:
            notes.append(f"{name} left out ({error.name} is not installed: pip install {package})")
    return rows, notes


# -- measuring -------------------------------------------------------------------------------


async def block(row: Row, runs: int) -> None:
    """``runs`` runs in a row; the CPU of the whole block is split evenly."""
    cpu = time.process_time()
    for _ in range(runs):
        began = time.perf_counter()
        answer = await row.run()
        row.wall.append(time.perf_counter() - began)
        if answer != ANSWER:
            raise SystemExit(f"{row.name} answered {answer!r}")
    await asyncio.sleep(0.05)  # let background logging finish inside the block
    row.cpu_per_run.append((time.process_time() - cpu) / runs)


async def measure(rows: list[Row], rounds: int, runs: int) -> None:
    """Every row, interleaved, ``rounds`` blocks each after a warm-up block."""
    for row in rows:
        await block(row, 2)
        row.cpu_per_run.clear()
        row.wall.clear()
    for index in range(rounds):
        shift = index % len(rows)
        for row in rows[shift:] + rows[:shift]:
            await block(row, runs)


def table(rows: list[Row]) -> str:
    """Medians and ratios to the first row (the bare openai SDK)."""
    base_cpu = statistics.median(rows[0].cpu_per_run)
    base_wall = statistics.median(rows[0].wall)
    cells = [["contender", "CPU ms/run", "x SDK", "wall ms p50", "x SDK"]]
    for row in rows:
        cpu, wall = statistics.median(row.cpu_per_run), statistics.median(row.wall)
        cells.append(
            [
                row.name,
                f"{cpu * 1000:.2f}",
                f"{cpu / base_cpu:.2f}",
                f"{wall * 1000:.2f}",
                f"{wall / base_wall:.2f}",
            ]
        )
    return table_text(cells, numbers_right=False, rule=False)


async def main_async(url: str, sizes: list[int], rounds: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        rows = bare_rows(url) + oracle_rows(url, sizes, Path(folder))
        others, notes = peers(url, sizes)
        rows += others
        await measure(rows, rounds, runs)
    print(
        f"{rounds} interleaved blocks x {runs} runs per contender; one model call per run; "
        "fake model in its own process on 127.0.0.1; medians"
    )
    print(table(rows))
    for note in notes:
        print(f"note: {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8, help="blocks per contender")
    parser.add_argument("--block", type=int, default=5, help="runs per block")
    parser.add_argument("--sizes", default="1,100,1000", help="catalog sizes (plugins)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    os.environ.setdefault("OPENAI_API_KEY", "sk-fake")  # the key both model clients read
    with fake_process() as fake:
        asyncio.run(main_async(fake.url, sizes, args.rounds, args.block))


if __name__ == "__main__":
    main()
