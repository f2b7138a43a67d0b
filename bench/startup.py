"""Start-up time of ``oracle plugins`` and ``Oracle()`` as the catalog grows, cold and warm.

``oracle plugins`` must not import litellm: with no plugins it should start well under
half a second. Then, for catalogs of installed Seal-Tools plugins (four tools each, see
``catalog.py``; byte-compiled, as pip leaves them): ``oracle plugins`` and building an
``Oracle()`` in a fresh process, each **cold** (no start-up cache under ``ORACLE_HOME``:
every tool schema is built and checked) and **warm** (the cache of the previous run is
there: nothing changed, so no schema is built). Last, the growth per plugin between
sizes, in milliseconds a plugin: flat means start-up is linear in the catalog.

Run: ``.venv/bin/python bench/startup.py [--repeat 3] [--sizes 250,1000,4000]``
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import itertools

from catalog import write_catalog

ORACLE = [sys.executable, "-m", "oracle_core"]
BUILD = [sys.executable, "-c", "from oracle_core import Oracle; Oracle()"]


def timed(args: list[str], env: dict[str, str], repeat: int, before: Callable[[], None]) -> float:
    """Median wall seconds of running ``args``, calling ``before`` ahead of each run."""
    samples = []
    for _ in range(repeat):
        before()
        start = time.perf_counter()
        subprocess.run(args, env=env, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", default="250,1000,4000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        home.mkdir()
        cache = home / "cache"

        def clear() -> None:
            shutil.rmtree(cache, ignore_errors=True)

        def keep() -> None:
            pass

        base = {**os.environ, "ORACLE_HOME": str(home)}
        floor = timed([sys.executable, "-c", "pass"], base, args.repeat, keep)
        helps = timed([*ORACLE, "--help"], base, args.repeat, keep)
        empty = timed([*ORACLE, "plugins"], {**base, "ORACLE_LOAD_PLUGINS": ""}, args.repeat, keep)
        print(f"python -c pass (floor)      {floor:7.3f} s")
        print(f"oracle --help               {helps:7.3f} s")
        print(f"oracle plugins, 0 plugins   {empty:7.3f} s\n")
        rows: list[tuple[int, list[float]]] = []
        for size in sizes:
            site = Path(folder) / f"site{size}"
            site.mkdir()
            names = write_catalog(site, size)
            compileall.compile_dir(site, quiet=1)  # pip byte-compiles what it installs
            env = {**base, "PYTHONPATH": str(site), "ORACLE_LOAD_PLUGINS": ",".join(names)}
            figures = []
            for command in ([*ORACLE, "plugins"], BUILD):
                figures.append(timed(command, env, args.repeat, clear))
                subprocess.run(command, env=env, check=True, capture_output=True)  # fill it
                figures.append(timed(command, env, args.repeat, keep))
            rows.append((size, figures))
            clear()
            shutil.rmtree(site)
            print(f"  ({size} plugins measured)", file=sys.stderr, flush=True)
        print_table(rows)


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


if __name__ == "__main__":
    main()
