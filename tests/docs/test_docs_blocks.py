"""Every fenced block of README.md and docs/*.md says what it is, and data blocks parse.

The languages that run have their own modules: test_docs_python.py, test_docs_toml.py and
test_docs_shell.py. A block in a language of :data:`~doc_blocks.NOT_RUN` (output, messages,
diagrams, synopses: ``text``) is not run; a block with no language, or another, fails here.
"""

from __future__ import annotations

import json

import pytest
import yaml
from doc_blocks import NOT_RUN, RUN, Block, all_blocks

JSON = all_blocks("json")
YAML = all_blocks("yaml")


def test_every_block_names_a_language_that_is_run_or_listed_as_not_run() -> None:
    unknown = [
        f"{b.id} ({b.lang or 'no language'})" for b in all_blocks() if b.lang not in RUN | NOT_RUN
    ]

    assert unknown == []


@pytest.mark.parametrize("block", JSON, ids=[b.id for b in JSON])
def test_a_json_block_parses(block: Block) -> None:
    assert json.loads(block.text) is not None


@pytest.mark.parametrize("block", YAML, ids=[b.id for b in YAML])
def test_a_yaml_block_parses(block: Block) -> None:
    assert yaml.safe_load(block.text) is not None


def test_fragments_are_few_and_say_what_they_need() -> None:
    fragments = [b for b in all_blocks() if b.fragment]

    assert len(fragments) <= 8, [b.id for b in fragments]
    assert all(len(b.fragment or "") >= 10 for b in fragments)
