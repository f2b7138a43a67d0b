"""One ``oracle ask`` as a whole process, beside a bare script making the same model call.

Every contender is a fresh process that asks a fake OpenAI model (running in a process of
its own on 127.0.0.1, so its work is not charged to the contender) one question and prints
the answer:

- ``bare openai SDK``: a script that imports ``openai``, makes one
  ``chat.completions.create`` call and prints the reply: the floor for the direct path;
- ``oracle ask``: the CLI with the plugins installed in this venv (warm: the start-up cache
  of an earlier run is there), a fresh thread, SQLite under a temporary ``ORACLE_HOME``;
- ``bare litellm``: a script making the same call with ``litellm.completion``;
- ``oracle ask, litellm client``: the CLI with ``ORACLE_MODEL_CLIENT=litellm``.

With ``--base TREE`` (e.g. ``git worktree add /tmp/base HEAD~5``), both ``oracle ask`` rows
are also run with that tree's ``oracle_core`` first on ``PYTHONPATH``, marked ``(base)``:
before and after in the same run.

Contenders are interleaved (the order rotated every round), each started by a small
spawner that reads its rusage: wall seconds, CPU seconds (user + system) and peak RSS, as
medians over the rounds. Children run outside the checkout, with their bytecode kept under
a private ``PYTHONPYCACHEPREFIX``, as an installed package has its ``.pyc`` files. The
ratios compare ``oracle ask`` with the bare openai script and the litellm-client row with
the bare litellm script (issue 27's targets: 1.3x and 1.5x).

Run: ``.venv/bin/python bench/ask.py [--rounds 7] [--base TREE]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from common import Child, serve_fake_model, table
from startup import ORACLE, Sample, Spawner, medians

QUESTION = "ping"

BARE_OPENAI = """
import sys
from openai import OpenAI
client = OpenAI(base_url=sys.argv[1], api_key="sk-fake")
reply = client.chat.completions.create(
    model="fake-model", messages=[{"role": "user", "content": sys.argv[2]}]
)
print(reply.choices[0].message.content)
"""

BARE_LITELLM = """
import os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import litellm
reply = litellm.completion(
    model="openai/fake-model", api_base=sys.argv[1], api_key="sk-fake",
    messages=[{"role": "user", "content": sys.argv[2]}],
)
print(reply.choices[0].message.content)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--base", type=Path, help="another checkout, measured beside this one")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_fake_model("pong", (12, 2))
        return
    with (
        Child([sys.executable, __file__, "--serve"]) as model,
        tempfile.TemporaryDirectory() as home,
    ):
        run(model.url, Path(home), args.rounds, args.base)


def run(url: str, folder: Path, rounds: int, base: Path | None) -> None:
    """Measure every contender ``rounds`` times, interleaved, and print the table."""
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-fake",
        # As pip leaves an installed package: byte-compiled (the warm-up round writes the
        # .pyc files), so no contender compiles its source.
        "PYTHONPYCACHEPREFIX": str(folder / "pycache"),
    }
    for name in ("ORACLE_MODEL_CLIENT", "ORACLE_LOAD_PLUGINS", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    ask = [*ORACLE, "ask", "--model", "openai/fake-model", "--api-base", url, QUESTION]
    trees = {"": (env.get("PYTHONPATH"), folder / "home")}
    if base is not None:
        trees[" (base)"] = (str(base.resolve()), folder / "base-home")
    contenders: dict[str, tuple[list[str], dict[str, str]]] = {
        "bare openai SDK": ([sys.executable, "-c", BARE_OPENAI, url, QUESTION], env),
        "bare litellm": ([sys.executable, "-c", BARE_LITELLM, url, QUESTION], env),
    }
    for suffix, (path, home) in trees.items():
        tree = {**env, "ORACLE_HOME": str(home), **({"PYTHONPATH": path} if path else {})}
        contenders[f"oracle ask{suffix}"] = (ask, tree)
        contenders[f"oracle ask, litellm client{suffix}"] = (
            ask,
            {**tree, "ORACLE_MODEL_CLIENT": "litellm"},
        )
    spawner = Spawner()
    spawner.cwd = str(folder)  # not a source tree: python would put it first on sys.path
    try:
        for args, child_env in contenders.values():  # fill caches, byte-compile
            spawner.run(args, child_env)
        samples: dict[str, list[Sample]] = {name: [] for name in contenders}
        names = list(contenders)
        for round_ in range(rounds):
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                args, child_env = contenders[name]
                samples[name].append(spawner.run(args, child_env))
    finally:
        spawner.close()
    figures = {name: medians(runs) for name, runs in samples.items()}
    rows = []
    for name, median in figures.items():
        floor = "bare litellm" if "litellm client" in name else "bare openai SDK"
        bare = figures[floor] if name.startswith("oracle") else None
        ratio = f"{median.wall / bare.wall:.2f}x / {median.cpu / bare.cpu:.2f}x" if bare else "-"
        cells = [f"{median.wall:.3f}", f"{median.cpu:.3f}", f"{median.rss / 1024:.0f}"]
        rows.append([name, *cells, ratio])
    print(f"One question to a loopback model, medians of {rounds} interleaved rounds")
    print(table([["contender", "wall s", "CPU s", "peak MiB", "wall / CPU vs bare"], *rows]))


if __name__ == "__main__":
    main()
