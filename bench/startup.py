"""Start-up time of CLI commands that never call a model (median of several runs).

``oracle plugins`` must not import litellm: with no plugins it should start well under
half a second. Also shown: the same with 100 and 1,000 installed Seal-Tools plugins.

Run: ``.venv/bin/python bench/startup.py [--repeat 5]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from catalog import write_catalog


def timed(args: list[str], env: dict[str, str], repeat: int) -> float:
    """Median wall seconds of running ``args``."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(args, env=env, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    oracle = [sys.executable, "-m", "oracle_core"]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        base = {**os.environ, "ORACLE_HOME": folder}
        rows.append(
            ("python -c pass (floor)", timed([sys.executable, "-c", "pass"], base, args.repeat))
        )
        rows.append(("oracle --help", timed([*oracle, "--help"], base, args.repeat)))
        rows.append(
            (
                "oracle plugins, 0 plugins",
                timed([*oracle, "plugins"], {**base, "ORACLE_LOAD_PLUGINS": ""}, args.repeat),
            )
        )
        for size in (100, 1000):
            site = Path(folder) / f"site{size}"
            site.mkdir()
            names = write_catalog(site, size)
            env = {**base, "PYTHONPATH": str(site), "ORACLE_LOAD_PLUGINS": ",".join(names)}
            rows.append(
                (f"oracle plugins, {size} plugins", timed([*oracle, "plugins"], env, args.repeat))
            )
    width = max(len(name) for name, _ in rows)
    print(f"{'command'.ljust(width)}  median s")
    print("-" * (width + 10))
    for name, seconds in rows:
        print(f"{name.ljust(width)}  {seconds:8.3f}")


if __name__ == "__main__":
    main()
