"""Start-up time of ``oracle plugins`` and ``Oracle()`` as the catalog grows, cold and warm.

``oracle plugins`` must not import litellm: with no plugins it should start well under
half a second. Then, for catalogs of installed Seal-Tools plugins (four tools each, see
``catalog.py``; byte-compiled, as pip leaves them): ``oracle plugins`` and building an
``Oracle()`` in a fresh process, each **cold** (no start-up cache under ``ORACLE_HOME``:
every tool schema is built and checked) and **warm** (the cache of the previous run is
there: nothing changed, so no schema is built). Then the growth per plugin between
sizes, in milliseconds a plugin: flat means start-up is linear in the catalog.

Last, the same catalogs beside simonw/llm's (when ``llm`` is importable): for each size,
1,000 included, an llm catalog of the same plugins (``llm_catalog.py``: the same four
functions each, registered by one ``register_tools`` hook) and, for ``oracle plugins``,
``Oracle()``, ``llm plugins`` (imports and lists every plugin) and ``llm tools list``
(also builds every tool's schema, as a cold ``Oracle()`` does): the child's CPU seconds
(user + system) and wall seconds, cold and warm, its peak RSS (``ru_maxrss``) and the
RSS a plugin adds: (peak at N - peak at 0 plugins) / N, in KB. llm keeps no start-up
cache, so its one figure stands under cold and warm alike (marked ``*``).

Every child writes and reads its bytecode under a private ``PYTHONPYCACHEPREFIX`` (an
installed package has its ``.pyc`` files; ``PYTHONDONTWRITEBYTECODE`` in the caller's
environment would otherwise make each child compile oracle-core again), and every command
runs once before it is measured.

With ``--base TREE`` (e.g. ``git worktree add /tmp/base HEAD``), every oracle row is also
measured with the oracle-core of that tree first on ``PYTHONPATH`` (its own
``ORACLE_HOME``), marked ``(base)``, the runs of both interleaved: a before and after on a
shared machine, from one run.

Every child is started by a small spawner process, which reads its rusage with
``os.wait4``: on Linux a child's ``ru_maxrss`` is at least the RSS of the process that
started it (``vfork`` then ``exec``), so the spawner is kept smaller than any child.

Run: ``.venv/bin/python bench/startup.py [--repeat 3] [--sizes 250,1000,4000] [--engine TREE]
[--base TREE]``
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from catalog import write_catalog
from common import table
from llm_catalog import write_llm_catalog

ORACLE = [sys.executable, "-m", "oracle_core"]
BUILD = [sys.executable, "-c", "from oracle_core import Oracle; Oracle()"]
LLM = [sys.executable, "-m", "llm"]

SPAWNER = """
import json, os, subprocess, sys, tempfile, time
for line in sys.stdin:
    args, env, cwd = json.loads(line)
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(args, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read()[-2000:].decode(errors="replace") if code else ""
    print(json.dumps([wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, code, tail]),
          flush=True)
"""
"""Runs each ``[args, env, cwd]`` line of its stdin; prints ``[wall, cpu, maxrss_kb, code, err]``."""


@dataclass(frozen=True)
class Figures:
    """Medians over the runs of one command: wall and CPU seconds, peak RSS in KB."""

    wall: float
    cpu: float
    rss: float


Sample = tuple[float, float, int]
"""One run of a command: wall seconds, CPU seconds, peak RSS in KB (see :meth:`Spawner.run`)."""


def medians(samples: Sequence[Sample]) -> Figures:
    """The median wall seconds, CPU seconds and peak RSS of ``samples``, each on its own."""
    walls, cpus, rsss = zip(*samples, strict=True)
    return Figures(statistics.median(walls), statistics.median(cpus), statistics.median(rsss))


class Spawner:
    """The small process that starts every measured child and reports its rusage."""

    def __init__(self) -> None:
        self.cwd: str | None = None
        """Where children run: not a source tree (``python -c`` puts its folder first on
        ``sys.path``, ahead of ``PYTHONPATH``, so the tree measured would not be)."""
        self.process = subprocess.Popen(
            [sys.executable, "-c", SPAWNER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, args: list[str], env: dict[str, str]) -> Sample:
        """Run ``args`` once; return its wall seconds, CPU seconds and peak RSS (KB).

        Raises:
            SystemExit: the command failed.
        """
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps([args, env, self.cwd]) + "\n")
        self.process.stdin.flush()
        wall, cpu, rss, code, tail = json.loads(self.process.stdout.readline())
        if code:
            raise SystemExit(f"{' '.join(args)} exited with {code}:\n{tail}")
        return wall, cpu, rss

    def measure(
        self, args: list[str], env: dict[str, str], repeat: int, before: Callable[[], None]
    ) -> Figures:
        """Medians of running ``args`` ``repeat`` times, calling ``before`` ahead of each."""
        samples = []
        for _ in range(repeat):
            before()
            samples.append(self.run(args, env))
        return medians(samples)

    def close(self) -> None:
        """End the spawner (it stops at the end of its stdin)."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def keep() -> None:
    """Leave everything as it is before a run (a warm run)."""


@dataclass
class Row:
    """One command at one catalog size, cold and warm (the same figures when it has no cache)."""

    command: str
    size: int
    cold: Figures
    warm: Figures
    cached: bool = True


@dataclass(frozen=True)
class Engine:
    """An oracle-core to measure: its label suffix, environment and start-up cache."""

    suffix: str
    env: dict[str, str]
    clear: Callable[[], None]


def interleaved(
    spawner: Spawner,
    command: list[str],
    engines: Sequence[Engine],
    repeat: int,
    cold: bool,
) -> list[Figures]:
    """Medians of ``repeat`` runs of ``command`` under each engine, their runs interleaved
    (one of each engine in turn), each run cold (cache cleared first) or warm."""
    samples: list[list[Sample]] = [[] for _ in engines]
    for _ in range(repeat):
        for engine, runs in zip(engines, samples, strict=True):
            if cold:
                engine.clear()
            runs.append(spawner.run(command, engine.env))
    return [medians(runs) for runs in samples]


def measure_oracle(
    spawner: Spawner, engines: Sequence[Engine], repeat: int, size: int
) -> list[Row]:
    """``oracle plugins`` and ``Oracle()`` under each engine, each cold then warm."""
    rows = []
    for label, command in (("oracle plugins", [*ORACLE, "plugins"]), ("Oracle()", BUILD)):
        colds = interleaved(spawner, command, engines, repeat, cold=True)
        for engine in engines:
            spawner.run(command, engine.env)  # fill the cache
        warms = interleaved(spawner, command, engines, repeat, cold=False)
        for engine, cold, warm in zip(engines, colds, warms, strict=True):
            rows.append(Row(label + engine.suffix, size, cold, warm))
    return rows


def measure_llm(spawner: Spawner, env: dict[str, str], repeat: int, size: int) -> list[Row]:
    """``llm plugins`` and ``llm tools list`` in ``env``: one set of runs each (no cache)."""
    rows = []
    for label, command in (
        ("llm plugins", [*LLM, "plugins"]),
        ("llm tools list", [*LLM, "tools", "list"]),
    ):
        figures = spawner.measure(command, env, repeat, keep)
        rows.append(Row(label, size, figures, figures, cached=False))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", default="250,1000,4000")
    parser.add_argument(
        "--engine",
        type=Path,
        help="measure the oracle-core of this tree instead of the installed one",
    )
    parser.add_argument(
        "--base",
        type=Path,
        help="also measure the oracle-core of this tree (a worktree of the commit before)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with_llm = importlib.util.find_spec("llm") is not None
    spawner = Spawner()
    try:
        run(spawner, sizes, args.repeat, with_llm, (args.engine, args.base))
    finally:
        spawner.close()


Trees = tuple[Path | None, Path | None]
"""The tree of the oracle-core measured (``None``: the installed one) and of the base."""


def engines_for(folder: Path, env: dict[str, str], site: Path | None, trees: Trees) -> list[Engine]:
    """The measured oracle-core and, with a base tree, that one: each with its own home."""
    engines = []
    for suffix, root in (("", trees[0]), (" (base)", trees[1])):
        if suffix and root is None:
            continue
        home = folder / f"home{suffix.strip(' ()')}"
        home.mkdir(exist_ok=True)
        path = [str(p) for p in (root, site) if p is not None]
        engine_env = {**env, "ORACLE_HOME": str(home)}
        if path:
            engine_env["PYTHONPATH"] = os.pathsep.join(path)
        cache = home / "cache"
        engines.append(
            Engine(suffix, engine_env, functools.partial(shutil.rmtree, cache, ignore_errors=True))
        )
    return engines


def byte_compile(site: Path, env: dict[str, str]) -> None:
    """Byte-compile ``site`` where the children read bytecode (as pip leaves an install)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(site)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def run(spawner: Spawner, sizes: list[int], repeat: int, with_llm: bool, trees: Trees) -> None:
    """Measure every size and print the tables."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        spawner.cwd = scratch
        llm_home = folder / "llm-home"
        llm_home.mkdir()
        base = {**os.environ, "PYTHONPYCACHEPREFIX": str(folder / "pycache")}
        base.pop("PYTHONPATH", None)
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        llm_base = {**base, "LLM_USER_PATH": str(llm_home)}
        llm_base.pop("LLM_LOAD_PLUGINS", None)
        base["ORACLE_HOME"] = str(folder / "home")
        (folder / "home").mkdir()
        # No plugins. The measured engine's environment is ``none`` itself: engines_for
        # sets the same ORACLE_HOME (``home``) and PYTHONPATH (the measured tree).
        none = {**base, "ORACLE_LOAD_PLUGINS": ""}
        if trees[0] is not None:
            none["PYTHONPATH"] = str(trees[0])
        idle = engines_for(folder, none, None, trees)
        for engine in idle:
            for command in ([*ORACLE, "plugins"], BUILD):  # writes the bytecode
                spawner.run(command, engine.env)
        if with_llm:
            spawner.run([*LLM, "plugins"], llm_base)
        floor = spawner.measure([sys.executable, "-c", "pass"], base, repeat, keep).wall
        helps = spawner.measure([*ORACLE, "--help"], base, repeat, keep).wall
        empty = spawner.measure([*ORACLE, "plugins"], idle[0].env, repeat, keep).wall
        print(f"python -c pass (floor)      {floor:7.3f} s")
        print(f"oracle --help               {helps:7.3f} s")
        print(f"oracle plugins, 0 plugins   {empty:7.3f} s\n")
        side = measure_oracle(spawner, idle, repeat, 0)
        if with_llm:
            side += measure_llm(spawner, llm_base, repeat, 0)
        rows: list[tuple[int, list[float]]] = []
        for size in sizes:
            site = Path(folder) / f"site{size}"
            site.mkdir()
            names = write_catalog(site, size)
            byte_compile(site, base)  # pip byte-compiles what it installs
            env = {**base, "ORACLE_LOAD_PLUGINS": ",".join(names)}
            engines = engines_for(folder, env, site, trees)
            measured = measure_oracle(spawner, engines, repeat, size)
            ours = [row for row in measured if "(base)" not in row.command]
            rows.append((size, [f.wall for row in ours for f in (row.cold, row.warm)]))
            side += measured
            for engine in engines:
                engine.clear()
            shutil.rmtree(site)
            if with_llm:
                site.mkdir()
                write_llm_catalog(site, size)
                byte_compile(site, llm_base)
                side += measure_llm(spawner, {**llm_base, "PYTHONPATH": str(site)}, repeat, size)
                shutil.rmtree(site)
            print(f"  ({size} plugins measured)", file=sys.stderr, flush=True)
        print_table(rows)
        print_side_by_side(side, with_llm)


def print_table(rows: list[tuple[int, list[float]]]) -> None:
    """The seconds of each size, then the growth per plugin between consecutive sizes."""
    head = "plugins  plugins cold  plugins warm  Oracle() cold  Oracle() warm"
    print(head)
    print("-" * len(head))
    for size, (a, b, c, d) in rows:
        print(f"{size:7d}  {a:10.2f} s  {b:10.2f} s  {c:11.2f} s  {d:11.2f} s")
    if len(rows) > 1:
        print("\ngrowth, ms a plugin between sizes")
        print(head.replace("plugins  ", "sizes        ", 1))
        for (small, low), (large, high) in itertools.pairwise(rows):
            per = [(h - lo) * 1000 / (large - small) for lo, h in zip(low, high, strict=True)]
            span = f"{small}-{large}"
            print(f"{span:>11}  " + "  ".join(f"{p:10.2f}  " for p in per))
    print(flush=True)


def print_side_by_side(rows: Sequence[Row], with_llm: bool) -> None:
    """CPU and wall seconds, peak RSS and RSS a plugin of every command at every size."""
    print("beside simonw/llm: CPU (user+sys) and wall seconds, peak RSS, RSS a plugin")
    zero = {row.command: row for row in rows if row.size == 0}
    cells = [
        [
            "command",
            "plugins",
            "CPU cold",
            "CPU warm",
            "wall cold",
            "wall warm",
            "RSS cold",
            "RSS warm",
            "KB/plugin cold",
            "KB/plugin warm",
        ]
    ]
    order = {name: i for i, name in enumerate(dict.fromkeys(row.command for row in rows))}
    for row in sorted(rows, key=lambda r: (r.size, order[r.command])):
        mark = "" if row.cached else "*"
        base = zero[row.command]
        per = [
            f"{(now.rss - then.rss) / row.size:.1f}{mark}" if row.size else "-"
            for now, then in ((row.cold, base.cold), (row.warm, base.warm))
        ]
        cells.append(
            [
                row.command,
                str(row.size),
                f"{row.cold.cpu:.2f} s{mark}",
                f"{row.warm.cpu:.2f} s{mark}",
                f"{row.cold.wall:.2f} s{mark}",
                f"{row.warm.wall:.2f} s{mark}",
                f"{row.cold.rss / 1024:.0f} MB{mark}",
                f"{row.warm.rss / 1024:.0f} MB{mark}",
                *per,
            ]
        )
    print(table(cells))
    if with_llm:
        print("* llm keeps no start-up cache: one set of runs, the same figure under cold and warm")
    else:
        print("llm rows skipped: llm is not importable in this Python")
    print_rss_growth(rows)
    print(flush=True)


def print_rss_growth(rows: Sequence[Row]) -> None:
    """The peak RSS each plugin added between consecutive sizes, warm, in KB: what one more
    plugin costs, without the memory a process with any plugin at all needs once."""
    sizes = sorted({row.size for row in rows})
    if len(sizes) < 3:
        return
    by = {(row.command, row.size): row for row in rows}
    spans = list(itertools.pairwise(sizes))[1:]  # from the first catalog on
    cells = [["command", *(f"KB a plugin {a}-{b} (warm)" for a, b in spans)]]
    for command in dict.fromkeys(row.command for row in rows):
        pairs = [(by.get((command, a)), by.get((command, b))) for a, b in spans]
        cells.append(
            [
                command,
                *(
                    f"{(high.warm.rss - low.warm.rss) / (high.size - low.size):.1f}"
                    if low is not None and high is not None
                    else "-"
                    for low, high in pairs
                ),
            ]
        )
    print("\nRSS growth between catalog sizes")
    print(table(cells))


if __name__ == "__main__":
    main()
