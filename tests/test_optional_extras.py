"""The suite collects on an install without an optional extra: what needs one skips, saying why."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # collects the whole suite in a subprocess

ROOT = Path(__file__).resolve().parents[1]

# Each optional extra of pyproject.toml by the module its tests need.
EXTRAS = {
    "postgres": ["psycopg", "psycopg_pool"],
    "mcp": ["mcp"],
    "otel": ["opentelemetry.sdk", "opentelemetry.exporter"],
}


def test_without_any_optional_extra_every_module_collects_or_skips(tmp_path: Path) -> None:
    # A module set to None in sys.modules cannot be imported: as on an install without it.
    blocked = [module for modules in EXTRAS.values() for module in modules]
    (tmp_path / "without_extras.py").write_text(
        textwrap.dedent(
            f"""
            import sys
            for name in {blocked!r}:
                sys.modules[name] = None
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "without_extras", "-rs"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )

    errors = [line for line in result.stdout.splitlines() if line.startswith("ERROR ")]
    assert errors == [], result.stdout[-3000:]
    assert result.returncode == 0, result.stdout[-3000:]
    skipped = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED ")]
    for extra in EXTRAS:
        assert any(f".[{extra}]" in line for line in skipped), (extra, skipped)
