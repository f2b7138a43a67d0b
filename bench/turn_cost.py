"""The framework's own time per turn on a thread of 10 messages and of 500, model call excluded.

A turn is one ``Oracle.run`` whose model (in process) answers at once: what is measured is
the oracle's own work, reading the thread, building the request, counting and saving. Each
sample runs on a thread seeded (untimed) with 10 or 500 messages, and the two sizes
alternate, so drift (caches, the file growing) falls on both alike. Both stores, the
memory store and SQLite, are measured; the bare row is the same model called directly, for
scale. Two kinds of turn: *continuing* a conversation this oracle had a turn on before (its
thread cache holds the start, so only what is new is read), and the *first turn* on a
thread another writer made (everything is read from the store). Goal (issues 11 and 13):
the 500-message turn within 1.2x the 10-message one.

The tracing rows (issue 26) measure a continuing turn on a 10-message thread, on memory
stores and on SQLite files (the store an oracle has by default), four ways, interleaved:
without the tracing observer at all, with it but no OpenTelemetry SDK configured (tracing
off: the default), and with an SDK tracer provider whose batch (or simple) processor hands
spans to an exporter that drops them (tracing on). They give the process CPU time of a
turn (the batch thread's included). Goals: off costs nothing measurable; on at most 15% more.

Run: ``.venv/bin/python bench/turn_cost.py [--turns 200] [--chars 300]``
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

from oracle_core import (
    Checkpointer,
    MemoryCheckpointer,
    Model,
    ModelRequest,
    ModelResponse,
    Oracle,
    Settings,
    SQLiteCheckpointer,
)
from oracle_core.models.base import assistant_message

sys.path.insert(0, str(Path(__file__).parent))
from common import quantile, table

SIZES = (10, 500)


class InstantModel(Model):
    """Answers every request at once with the same short text."""

    name = "instant"

    def __init__(self) -> None:
        self.response = ModelResponse(assistant_message("The answer is 42.", None))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return self.response


def history(size: int, chars: int) -> list[dict[str, Any]]:
    """``size`` alternating user and assistant messages of about ``chars`` characters each."""
    words = ("lorem ipsum dolor sit amet consectetur adipiscing elit " * (chars // 50 + 1))[:chars]
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": f"{i}: {words}"} for i in range(size)]


def quantiles(samples: list[float]) -> tuple[float, float]:
    """Median and p90 of ``samples``, in microseconds."""
    return statistics.median(samples) * 1e6, quantile(samples, 0.9) * 1e6


async def turns(
    store: Checkpointer, home: Path, count: int, chars: int, *, continuing: bool
) -> dict[int, tuple[float, float]]:
    """Median and p90 microseconds of a turn on a thread of each size, sizes interleaved.

    ``continuing``: the turns continue 20 conversations of each size that this oracle has
    already had one turn on (the usual case: its thread cache holds them); otherwise every
    turn is the first on a fresh thread, seeded by another writer (all read from the store).
    """
    oracle = Oracle(
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(home)}),
        model=InstantModel(),
        checkpointer=store,
    )
    seeds = {size: history(size, chars) for size in SIZES}
    samples: dict[int, list[float]] = {size: [] for size in SIZES}
    pool = 20
    async with oracle:
        if continuing:
            for size in SIZES:
                for n in range(pool):
                    await store.append(f"c{size}-{n}", base=0, messages=seeds[size])
                    await oracle.run(f"c{size}-{n}", "warm up")
        for index in range(count + 10):  # the first 10 of each size warm up, unrecorded
            for size in SIZES if index % 2 else reversed(SIZES):
                if continuing:
                    thread = f"c{size}-{index % pool}"
                else:
                    thread = f"t{size}-{index}"
                    await store.append(thread, base=0, messages=seeds[size])
                began = time.perf_counter()
                result = await oracle.run(thread, "What is the answer?")
                took = time.perf_counter() - began
                assert result.status == "completed", result.error
                if index >= 10:
                    samples[size].append(took)
    return {size: quantiles(samples[size]) for size in SIZES}


async def bare(count: int) -> tuple[float, float]:
    """Median and p90 microseconds of the model alone, called directly."""
    model = InstantModel()
    request = ModelRequest(
        thread_id="bare",
        run_id="bare",
        step=1,
        model=model.name,
        system_prompt="",
        messages=(),
        tools=(),
    )
    samples = []
    for _ in range(count):
        began = time.perf_counter()
        await model.complete(request)
        samples.append(time.perf_counter() - began)
    return quantiles(samples)


TRACING_MODES = (
    "no tracing observer",
    "tracing off (no SDK)",
    "tracing on (SDK, batch, no-op exporter)",
    "tracing on (SDK, simple, no-op exporter)",
)


def tracing_oracle(mode: str, home: Path, store: Checkpointer | None = None) -> Oracle:
    """An oracle on ``store`` (default a memory store) traced as ``mode`` says (one of
    :data:`TRACING_MODES`)."""
    observers: list[Any] = []
    if mode in TRACING_MODES[2:]:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SimpleSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )

        from oracle_core.telemetry.tracing import TracingObserver

        class Dropped(SpanExporter):
            def export(self, spans: Any) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        simple = mode == TRACING_MODES[3]
        processor = SimpleSpanProcessor if simple else BatchSpanProcessor
        provider.add_span_processor(processor(Dropped()))
        observers.append(TracingObserver(provider))
    oracle = Oracle(
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(home)}),
        model=InstantModel(),
        checkpointer=store if store is not None else MemoryCheckpointer(),
        observers=observers,
    )
    return oracle


def untraced(settings: Any, *args: Any, **kwargs: Any) -> list[Any]:
    """The oracle's default observers, less the tracing one (the baseline row; the traced
    rows add their own, so each has one tracing observer, as an oracle in production)."""
    from oracle_core.telemetry import default_observers
    from oracle_core.telemetry.tracing import TracingObserver

    found = default_observers(settings, *args, **kwargs)
    return [o for o in found if not isinstance(o, TracingObserver)]


async def tracing_turns(
    home: Path, count: int, chars: int, sqlite: bool = False
) -> dict[str, tuple[float, float]]:
    """Median wall and CPU microseconds of a continuing 10-message turn, per tracing mode,
    on memory stores (or, with ``sqlite``, on SQLite files: the store an oracle has by
    default)."""
    import oracle_core.oracle as oracle_module

    seed = history(10, chars)
    wall: dict[str, list[float]] = {m: [] for m in TRACING_MODES}
    cpu: dict[str, list[float]] = {m: [] for m in TRACING_MODES}
    oracles = {}
    for number, mode in enumerate(TRACING_MODES):
        store = SQLiteCheckpointer(home / f"traced-{number}.db") if sqlite else None
        oracle = tracing_oracle(mode, home, store)
        if mode == TRACING_MODES[1]:
            await oracle.start()  # the default tracing observer, with no SDK configured
        else:  # none, or exactly one tracing observer: the one given, with its SDK
            with patch.object(oracle_module, "default_observers", untraced):
                await oracle.start()  # the observers are built now
        for n in range(20):
            await oracle.checkpointer.append(f"c-{n}", base=0, messages=seed)
            await oracle.run(f"c-{n}", "warm up")
        oracles[mode] = oracle
    for index in range(count + 30):  # turn by turn, the modes in turn: drift falls on all
        shift = index % len(TRACING_MODES)
        order = TRACING_MODES[shift:] + TRACING_MODES[:shift]
        for mode in order:
            oracle = oracles[mode]
            began, used = time.perf_counter(), time.process_time()
            result = await oracle.run(f"c-{index % 20}", "What is the answer?")
            took, spent = time.perf_counter() - began, time.process_time() - used
            assert result.status == "completed", result.error
            if index >= 30:  # the first 30 of each mode warm up
                wall[mode].append(took)
                cpu[mode].append(spent)
    for oracle in oracles.values():
        await oracle.close()
    return {
        m: (statistics.median(wall[m]) * 1e6, statistics.median(cpu[m]) * 1e6)
        for m in TRACING_MODES
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns measured per thread size")
    parser.add_argument("--chars", type=int, default=300, help="characters per seeded message")
    args = parser.parse_args()
    rows = [
        [
            "store",
            "p50 us @10",
            "p90 us @10",
            "p50 us @500",
            "p90 us @500",
            "p50 500/10",
            "p90 500/10",
        ]
    ]
    with tempfile.TemporaryDirectory() as folder:
        stores: list[tuple[str, Callable[[], Checkpointer]]] = [
            ("memory", MemoryCheckpointer),
            ("sqlite", lambda: SQLiteCheckpointer(Path(folder) / "turns.db")),
        ]
        for (name, make), continuing in itertools.product(stores, (True, False)):
            kind = "continuing" if continuing else "first turn"
            print(f"measuring the {name} store, {kind}...", file=sys.stderr, flush=True)
            found = asyncio.run(
                turns(make(), Path(folder), args.turns, args.chars, continuing=continuing)
            )
            (p50_small, p90_small), (p50_large, p90_large) = found[10], found[500]
            rows.append(
                [
                    f"{name}, {kind}",
                    f"{p50_small:.0f}",
                    f"{p90_small:.0f}",
                    f"{p50_large:.0f}",
                    f"{p90_large:.0f}",
                    f"{p50_large / p50_small:.2f}x",
                    f"{p90_large / p90_small:.2f}x",
                ]
            )
    p50, p90 = asyncio.run(bare(args.turns))
    rows.append(["bare model call", f"{p50:.1f}", f"{p90:.1f}", f"{p50:.1f}", f"{p90:.1f}", "", ""])
    print(
        f"one turn (Oracle.run, an instant in-process model), {args.turns} turns per size, "
        f"messages of {args.chars} characters; goal: 500/10 within 1.20x"
    )
    print(table(rows))
    print(file=sys.stderr)
    print()
    print("a turn traced: goals: off within noise of none; on at most 1.15x of none's CPU")
    for name, sqlite in (("memory", False), ("sqlite", True)):
        print(f"measuring tracing off and on, {name} store...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory() as folder:
            found_traced = asyncio.run(
                tracing_turns(Path(folder), args.turns, args.chars, sqlite=sqlite)
            )
        base_cpu = found_traced[TRACING_MODES[0]][1]
        traced = [
            [f"tracing ({name}, continuing, @10)", "p50 us wall", "p50 us CPU", "CPU vs none"]
        ]
        for mode in TRACING_MODES:
            took, spent = found_traced[mode]
            traced.append([mode, f"{took:.0f}", f"{spent:.0f}", f"{spent / base_cpu:.2f}x"])
        print(table(traced))


if __name__ == "__main__":
    main()
