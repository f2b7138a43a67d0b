"""Every command line of the ```sh, ```bash and ```console blocks of README.md and docs/*.md
is one the tools take.

Each ``oracle ...`` command (also inside ``$(...)`` or after a pipe) is parsed by the real
click command: the sub-command exists, and so do its options, with the arguments they need.
``make TARGET`` names a target of the Makefile, and a local path given to ``pip install``
exists in this checkout. A chosen set of ``oracle`` lines (:data:`RUN`) really runs, in doc
order, against a fresh ``ORACLE_HOME`` with the offline ``demo`` model. Other commands
(``curl``, ``export``, ``git``) are not run. In a ```console block only the lines after
``$ `` are commands; the rest is output.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from doc_blocks import ROOT, Block, all_blocks

from oracle_core.cli import main

BLOCKS = all_blocks("sh", "bash", "console")
SEPARATORS = {"|", "||", "&&", ";", "&", "(", ")", ">", ">>", "<", "2>"}

RUN = {
    "oracle plugins": "oracle-plugin-weather",
    'oracle "What is 17.5% of 2,340?"': "409.5",
    'oracle ask -c "And of 1,200?"': "",
    "oracle threads": "ask-",
    "oracle config": "model:         demo",
    'oracle ask "..." --model demo': "",
    'oracle ask --max-tokens 512 "What can you do?"': "",
    "oracle connections keygen": "=",
    'oracle search --explain "weather in porto"': "weather: lexical",
}
"""The lines run for real, as the docs write them, and a text each one's output shows."""

OFFLINE = """[plugins.weather]  # a closed port: no call leaves the machine
geocoding_url = "http://127.0.0.1:9/search"
forecast_url = "http://127.0.0.1:9/forecast"
"""


def command_lines(block: Block) -> list[str]:
    """The shell lines of ``block``: continuations and quotes over lines joined, console
    output left out."""
    lines = block.text.replace("\\\n", " ").splitlines()
    if block.lang == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    joined: list[str] = []
    pending = ""
    for line in lines:
        pending = f"{pending}\n{line}" if pending else line
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the command goes on
            continue
        if pending.strip():
            joined.append(pending)
        pending = ""
    assert not pending, f"{block.id}: a quote is never closed"
    return joined


def commands(line: str) -> list[list[str]]:
    """The simple commands of one shell line, each without its ``VAR=value`` prefixes."""
    lexer = shlex.shlex(line.replace("$(", "( "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    found: list[list[str]] = [[]]
    for token in lexer:
        if token in SEPARATORS:
            found.append([])
        elif found[-1] or not re.fullmatch(r"\w+=.*", token):
            found[-1].append(token)
    return [words for words in found if words]


def oracle_commands(block: Block) -> list[list[str]]:
    """The ``oracle`` commands of ``block``, as the words after ``oracle``."""
    return [
        words[1:]
        for line in command_lines(block)
        for words in commands(line)
        if words[0] == "oracle"
    ]


def parse(args: list[str]) -> click.Context:
    """Parse ``oracle ARGS`` down to its last sub-command, as click would run it."""
    # Without arguments the group shows its help (a completion script, with _ORACLE_COMPLETE).
    context = main.make_context("oracle", list(args), resilient_parsing=not args)
    command: click.Command = main
    while isinstance(command, click.Group):
        rest = [*context._protected_args, *context.args]
        if not rest:
            break
        name, sub, rest = command.resolve_command(context, rest)
        assert sub is not None and name is not None
        command, context = sub, sub.make_context(name, rest, parent=context)
    return context


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([\w.-]+):", text, re.M))


def local_paths(words: list[str]) -> list[str]:
    """The paths in this checkout a ``pip install`` names (``.``, ``'.[server]'``, ``./x``,
    ``plugins/x``) and the ``#subdirectory=x`` of its URLs."""
    bare = [word.split("[")[0] for word in words]
    paths = [w for w in bare if w in (".", "..") or w.startswith(("./", "plugins/", "contrib/"))]
    return paths + re.findall(r"subdirectory=([\w./-]+)", " ".join(words))


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_every_command_of_the_block_is_one_the_tools_take(block: Block) -> None:
    for line in command_lines(block):
        for words in commands(line):
            if words[0] == "oracle":
                context = parse(words[1:])
                assert context.command.get_help(context)
            elif words[0] == "make":
                assert set(words[1:2]) <= make_targets(), line
            elif words[:2] == ["pip", "install"]:
                for path in local_paths(words):
                    assert (ROOT / path).exists(), f"{block.id}: {line}: no {path}"


def test_the_chosen_lines_are_still_in_the_docs() -> None:
    documented = {tuple(words) for block in BLOCKS for words in oracle_commands(block)}

    assert [line for line in RUN if tuple(shlex.split(line)[1:]) not in documented] == []


def test_the_chosen_lines_run_with_the_demo_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in [v for v in os.environ if v.startswith(("ORACLE_", "OPENAI_"))]:
        monkeypatch.delenv(variable)
    home = tmp_path / "home"
    home.mkdir()
    (home / "oracle.toml").write_text(OFFLINE)
    env = {"ORACLE_HOME": str(home), "ORACLE_MODEL": "demo"}
    runner = CliRunner()

    for line, shown in RUN.items():
        result = runner.invoke(main, shlex.split(line)[1:], env=env, catch_exceptions=False)
        assert result.exit_code == 0, f"{line}: {result.output}"
        assert shown in result.output, f"{line}: {result.output}"
