"""The complete example of docs/testing.md runs and passes, so the page stays true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).parents[2] / "docs" / "testing.md"

# A fenced block whose first line is a comment naming a file: "# tests/test_dice.py".
FILE_BLOCK = re.compile(
    r"```(?:python|toml)\n# (?P<path>[\w/.-]+\.(?:py|toml))\n(?P<body>.*?)```", re.S
)


def test_the_complete_example_of_the_testing_guide_passes(pytester: pytest.Pytester) -> None:
    files = {m["path"]: m["body"] for m in FILE_BLOCK.finditer(GUIDE.read_text())}
    assert set(files) == {"pyproject.toml", "oracle_plugin_dice/__init__.py", "tests/test_dice.py"}
    for path, body in files.items():
        target = pytester.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
    pytester.syspathinsert()  # as `pip install -e .` would make the plugin importable

    pytester.runpytest().assert_outcomes(passed=4)
