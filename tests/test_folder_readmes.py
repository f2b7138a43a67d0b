"""Every folder of ``oracle_core/`` that holds Python says, in a README.md, what lives there.

A newcomer opening a folder should learn from its README what concept it holds, which layer
it is in, what it may import and where each kind of change goes. A new folder without one
fails here, naming the folder.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "oracle_core"


def python_folders() -> list[Path]:
    """Every folder of the package (itself included) that holds a ``.py`` file."""
    return sorted(
        {path.parent for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts}
    )


def test_the_package_has_python_folders_to_check() -> None:
    folders = python_folders()
    assert PACKAGE in folders
    assert PACKAGE / "run" / "waits" in folders


def test_every_python_folder_of_the_package_has_a_readme() -> None:
    missing = [
        str(folder.relative_to(PACKAGE.parent))
        for folder in python_folders()
        if not (folder / "README.md").is_file()
    ]
    assert not missing, "folders of oracle_core without a README.md: " + ", ".join(missing)


def test_every_readme_says_where_changes_go_in_a_short_page() -> None:
    wrong = []
    for folder in python_folders():
        readme = folder / "README.md"
        if not readme.is_file():
            continue  # named by the test above
        text = readme.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        name = str(readme.relative_to(PACKAGE.parent))
        if not 10 <= lines <= 40:
            wrong.append(f"{name}: {lines} lines (keep it between 10 and 40)")
        if not text.startswith("# "):
            wrong.append(f"{name}: no title")
        if "## Where changes go" not in text:
            wrong.append(f"{name}: no '## Where changes go' section")
    assert not wrong, "\n".join(wrong)
