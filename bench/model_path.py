"""CPU and wall time of one model call: the openai SDK, litellm and its settings, the direct path.

Every contender calls the same fixed-reply fake OpenAI server, which runs in its own
process (so its CPU is not charged to the caller), with the same messages and tools, first
in one piece and then streamed. Contenders are interleaved in blocks (A B C ... A B C ...,
the order rotated every round) so machine noise falls on all of them alike. For each block
the script records the CPU the whole process spent (``time.process_time``: every thread,
so litellm's background logging counts) divided by the calls made, and the wall time of
each call; the table shows medians and the ratio to the bare openai SDK.

The litellm rows differ only in module settings, each set just before its block:

- ``litellm (as shipped)``: litellm's defaults (telemetry and debug banner off);
- ``+ turn_off_message_logging``: callbacks no longer receive the messages;
- ``+ disable_streaming_logging``: no logging of streamed chunks;
- ``+ callbacks empty``: every callback list emptied (they are empty by default);
- ``+ LiteLLM loggers at WARNING``;
- ``litellm, configure_litellm()``: exactly what :func:`oracle_core.environment.configure_litellm`
  applies;
- ``OpenAIModel`` and ``LiteLLMModel``: oracle-core's two model classes, whole
  (request building, response mapping and usage included).

Run: ``.venv/bin/python bench/model_path.py [--rounds 15] [--block 20]``
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from common import Child, serve_fake_model
from common import table as table_text

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful assistant. Answer briefly."},
    {"role": "user", "content": "What is the answer to everything?"},
]
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{i}",
            "description": f"Tool number {i}: looks something up.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "what to look up"}},
                "required": ["query"],
            },
        },
    }
    for i in range(8)
]
ANSWER = "The answer is 42, as everybody knows; there is little more to say about it."

LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


# -- the fake model in its own process -----------------------------------------------------


def fake_process() -> Child:
    """The fake OpenAI server in a child process (``python bench/model_path.py --serve``)."""
    return Child([sys.executable, __file__, "--serve"])


# -- contenders ------------------------------------------------------------------------------

Call = Callable[[bool], Awaitable[str]]
"""One model call; the argument says whether to stream. Returns the answer's text."""


@dataclass
class Contender:
    """A way of making the call, and the litellm settings it runs under."""

    name: str
    call: Call
    settings: dict[str, Any] = field(default_factory=dict)
    loggers_at_warning: bool = False
    configured: bool = False


def litellm_defaults(litellm: Any) -> dict[str, Any]:
    """The module settings the contenders change, as litellm ships them."""
    return {
        "turn_off_message_logging": litellm.turn_off_message_logging,
        "disable_streaming_logging": litellm.disable_streaming_logging,
        "callbacks": list(litellm.callbacks),
        "success_callback": list(litellm.success_callback),
        "failure_callback": list(litellm.failure_callback),
        "_async_success_callback": list(litellm._async_success_callback),
        "_async_failure_callback": list(litellm._async_failure_callback),
    }


def apply(litellm: Any, defaults: dict[str, Any], contender: Contender) -> None:
    """Put litellm's module settings as ``contender`` wants them (defaults otherwise)."""
    from oracle_core.environment import configure_litellm

    for name, value in defaults.items():
        setattr(litellm, name, list(value) if isinstance(value, list) else value)
    for logger in LITELLM_LOGGERS:
        logging.getLogger(logger).setLevel(logging.NOTSET)
    if contender.configured:
        configure_litellm(litellm)
    for name, value in contender.settings.items():
        setattr(litellm, name, value)
    if contender.loggers_at_warning:
        for logger in LITELLM_LOGGERS:
            logging.getLogger(logger).setLevel(logging.WARNING)


def contenders(url: str, litellm: Any) -> list[Contender]:
    """Every way of calling the fake at ``url``."""
    from openai import AsyncOpenAI

    from oracle_core.authoring.tools.tool import Tool
    from oracle_core.models.litellm import LiteLLMModel
    from oracle_core.models.openai import OpenAIModel
    from oracle_core.values.messages import ModelRequest, ModelResponse

    client = AsyncOpenAI(base_url=url, api_key="sk-fake", max_retries=2, timeout=120.0)
    create: Any = client.chat.completions.create  # plain dicts, as every contender sends

    async def sdk(stream: bool) -> str:
        if not stream:
            response = await create(model="fake-model", messages=MESSAGES, tools=TOOLS)
            return response.choices[0].message.content or ""
        pieces = []
        chunks = await create(
            model="fake-model",
            messages=MESSAGES,
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in chunks:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
        return "".join(pieces)

    async def bare_litellm(stream: bool) -> str:
        arguments: dict[str, Any] = {
            "model": "openai/fake-model",
            "api_base": url,
            "api_key": "sk-fake",
            "messages": MESSAGES,
            "tools": TOOLS,
            "num_retries": 2,
            "timeout": 120.0,
        }
        if not stream:
            response = await litellm.acompletion(**arguments)
            return str(response.choices[0].message.content or "")
        pieces = []
        chunks = await litellm.acompletion(
            **arguments, stream=True, stream_options={"include_usage": True}
        )
        async for chunk in chunks:
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
        return "".join(pieces)

    tools = tuple(
        Tool(
            name=t["function"]["name"],
            description=t["function"]["description"],
            parameters=t["function"]["parameters"],
            function=lambda query: query,
        )
        for t in TOOLS
    )
    request = ModelRequest(
        "bench", "run", 1, "openai/fake-model", MESSAGES[0]["content"], (MESSAGES[1],), tools
    )

    def oracle_model(model: Any) -> Call:
        async def call(stream: bool) -> str:
            if not stream:
                return str((await model.complete(request)).text)
            last: Any = None
            async for piece in model.stream(request):
                last = piece
            assert isinstance(last, ModelResponse)
            return last.text

        return call

    direct = OpenAIModel("openai/fake-model", api_base=url, api_key="sk-fake")
    wrapped = LiteLLMModel("openai/fake-model", api_base=url, api_key="sk-fake")
    return [
        Contender("openai SDK (AsyncOpenAI)", sdk),
        Contender("litellm (as shipped)", bare_litellm),
        Contender(
            "litellm + turn_off_message_logging",
            bare_litellm,
            {"turn_off_message_logging": True},
        ),
        Contender(
            "litellm + disable_streaming_logging",
            bare_litellm,
            {"disable_streaming_logging": True},
        ),
        Contender(
            "litellm + callbacks empty",
            bare_litellm,
            {name: [] for name in litellm_defaults(litellm) if "callback" in name},
        ),
        Contender("litellm + LiteLLM loggers at WARNING", bare_litellm, loggers_at_warning=True),
        Contender("litellm, configure_litellm()", bare_litellm, configured=True),
        Contender("OpenAIModel (direct path)", oracle_model(direct)),
        Contender("LiteLLMModel, configure_litellm()", oracle_model(wrapped), configured=True),
    ]


# -- measuring -------------------------------------------------------------------------------


@dataclass
class Samples:
    """What one contender measured in one mode."""

    cpu_per_call: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)


async def block(contender: Contender, stream: bool, calls: int, samples: Samples) -> None:
    """``calls`` calls in a row; the CPU of the whole block, settled, is split evenly."""
    cpu = time.process_time()
    for _ in range(calls):
        began = time.perf_counter()
        text = await contender.call(stream)
        samples.wall.append(time.perf_counter() - began)
        if text != ANSWER:
            raise SystemExit(f"{contender.name} answered {text!r}")
    # litellm finishes its logging in tasks and threads after the call returns: give them
    # time to run, so their CPU is charged to this block and not to the next contender.
    await asyncio.sleep(0.05)
    samples.cpu_per_call.append((time.process_time() - cpu) / calls)


async def measure(url: str, rounds: int, calls: int) -> dict[tuple[str, bool], Samples]:
    """Every contender, both modes, interleaved; returns samples by (name, stream)."""
    from oracle_core.environment import import_litellm

    litellm = import_litellm()
    defaults = litellm_defaults(litellm)
    everyone = contenders(url, litellm)
    results = {(c.name, s): Samples() for c in everyone for s in (False, True)}
    for contender in everyone:  # warm up: imports, connection pools, first-call caches
        apply(litellm, defaults, contender)
        for stream in (False, True):
            await block(contender, stream, 3, Samples())
    for index in range(rounds):
        order = everyone[index % len(everyone) :] + everyone[: index % len(everyone)]
        for stream in (False, True):
            for contender in order:
                apply(litellm, defaults, contender)
                await block(contender, stream, calls, results[contender.name, stream])
    apply(litellm, defaults, Contender("reset", everyone[0].call))
    return results


def table(results: dict[tuple[str, bool], Samples]) -> str:
    """The results as a text table, with ratios to the openai SDK row."""
    names = list(dict.fromkeys(name for name, _ in results))
    headers = [
        "contender",
        "CPU ms/call",
        "x SDK",
        "wall ms p50",
        "x SDK",
        "stream CPU ms",
        "x SDK",
        "stream wall p50",
        "x SDK",
    ]
    rows = [headers]
    base = {s: results[names[0], s] for s in (False, True)}
    for name in names:
        cells = [name]
        for stream in (False, True):
            got = results[name, stream]
            cpu = statistics.median(got.cpu_per_call)
            wall = statistics.median(got.wall)
            cells += [
                f"{cpu * 1000:.2f}",
                f"{cpu / statistics.median(base[stream].cpu_per_call):.2f}",
                f"{wall * 1000:.2f}",
                f"{wall / statistics.median(base[stream].wall):.2f}",
            ]
        rows.append(cells)
    return table_text(rows, numbers_right=False, rule=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="blocks per contender and mode")
    parser.add_argument("--block", type=int, default=20, help="calls per block")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_fake_model(ANSWER, (120, 20))
        return
    with fake_process() as fake:
        results = asyncio.run(measure(fake.url, args.rounds, args.block))
    print(
        f"{args.rounds} interleaved blocks x {args.block} calls per contender and mode; "
        "fake model in its own process on 127.0.0.1; 8 tools shown; medians"
    )
    print(table(results))


if __name__ == "__main__":
    main()
