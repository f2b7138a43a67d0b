"""``ORACLE_*`` environment variables that nothing reads are named in a warning with the
closest known name (settings/variables.py); the known list is the source's own."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from oracle_core.settings.variables import KNOWN_VARIABLES, unknown_variables

ROOT = Path(__file__).resolve().parents[2]


def test_the_known_variables_are_exactly_those_the_code_reads() -> None:
    code = "\n".join(p.read_text() for p in (ROOT / "oracle_core").rglob("*.py"))
    found = set(re.findall(r"\b(ORACLE_[A-Z0-9_]+[A-Z0-9])\b", code)) - {"ORACLE_PLUGIN_"}
    read = {name for name in found if not name.startswith("ORACLE_TEST_")}
    examples = {"ORACLE_PLUGIN_WEATHER__UNITS", "ORACLE_PLUGIN_WEATHER_UNITS", "ORACLE_MODLE"}

    assert sorted(read - KNOWN_VARIABLES - examples) == []
    assert sorted(KNOWN_VARIABLES - read) == []


def _typo(name: str, rng: random.Random) -> str:
    """``name`` with one letter after ``ORACLE_`` dropped, doubled or swapped with the next."""
    index = rng.randrange(len("ORACLE_"), len(name) - 1)
    kind = rng.choice(["drop", "double", "swap"])
    if kind == "drop":
        return name[:index] + name[index + 1 :]
    if kind == "double":
        return name[:index] + name[index] + name[index:]
    return name[:index] + name[index + 1] + name[index] + name[index + 2 :]


def test_a_seeded_typo_of_every_known_variable_is_warned_with_the_right_name() -> None:
    rng = random.Random(25)
    missed = []
    for name in sorted(KNOWN_VARIABLES):
        typo = _typo(name, rng)
        if typo in KNOWN_VARIABLES or typo == name:
            continue
        warnings = unknown_variables({typo: "1"})
        assert len(warnings) == 1 and typo in warnings[0]
        if f"did you mean {name}?" not in warnings[0]:
            missed.append((typo, warnings[0]))
    assert missed == []


@pytest.mark.parametrize(
    "env",
    [
        {name: "1" for name in KNOWN_VARIABLES},
        {"ORACLE_PLUGIN_WEATHER__UNITS": "c", "ORACLE_PLUGIN_WEB_SEARCH__KEY": "x"},
        {"PATH": "/bin", "ORACLEX": "1", "oracle_model": "x", "OPENAI_API_KEY": "k"},
        {"ORACLE_TEST_DATABASE_URL": "postgresql://x", "ORACLE_TEST_BLOCK": "a,b"},
    ],
    ids=["every-known", "plugin-settings", "not-ours", "test-harness"],
)
def test_what_is_read_or_not_ours_is_never_warned(env: dict[str, str]) -> None:
    assert unknown_variables(env) == []


def test_a_plugin_setting_with_one_underscore_before_its_key_says_how_to_write_it() -> None:
    (warning,) = unknown_variables({"ORACLE_PLUGIN_WEATHER_UNITS": "c"})

    assert "ORACLE_PLUGIN_<NAME>__<KEY>" in warning and "two underscores" in warning


def test_every_command_names_a_misspelled_variable_on_stderr_and_goes_on(tmp_path: Path) -> None:
    env = {"ORACLE_HOME": str(tmp_path), "ORACLE_MODLE": "openai/gpt-4o", "PATH": "/usr/bin"}

    result = subprocess.run(
        [sys.executable, "-m", "oracle_core", "config"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "ORACLE_MODLE is ignored" in result.stderr
    assert "did you mean ORACLE_MODEL?" in result.stderr
