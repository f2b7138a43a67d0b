"""Every module of the core and of this repository's plugin packages imports.

Against whichever releases are installed: ``make test`` has the newest each dependency range
admits, ``make test-lowest`` the oldest. A module that uses what a lower bound's release
does not have fails here, named, before any test of what it does.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from test_optional_extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]


def _module_names() -> list[str]:
    """The dotted names of the modules, read from the files (nothing imported to list them)."""
    packages = [ROOT / "oracle_core", *sorted(ROOT.glob("*/oracle-plugin-*/oracle_plugin_*"))]
    names = []
    for package in packages:
        if not (package / "__init__.py").is_file():
            continue  # an .egg-info folder, or a package not in this checkout
        for path in sorted(package.rglob("*.py")):
            parts = path.relative_to(package.parent).with_suffix("").parts
            if parts[-1] == "__main__":
                continue  # running it is the point: `python -m oracle_core` starts the CLI
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _extra_for(missing: str | None) -> str | None:
    """The optional extra whose modules include ``missing``, if any."""
    for extra, modules in EXTRAS.items():
        if missing and any(missing == m or missing.startswith(m + ".") for m in modules):
            return extra
    return None


@pytest.mark.parametrize("name", _module_names())
def test_the_module_imports(name: str) -> None:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as error:
        extra = _extra_for(error.name)
        if extra is None:
            raise
        pytest.skip(f"{name} needs the [{extra}] extra: pip install -e '.[{extra}]'")
