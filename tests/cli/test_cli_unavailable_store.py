"""A store or embedding model that cannot be reached is one line naming the setting and the
fix, not a driver's traceback: an unreachable Postgres, an ``ORACLE_HOME`` that cannot be
created, a bad ``ORACLE_EMBEDDING_MODEL``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from oracle_core.cli import main


def run(home: Path, *args: str, **env: str) -> tuple[int, str]:
    """``oracle ARGS`` in process: (exit code, stderr); an escaped exception fails the test."""
    environ = {"ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": "", **env}
    if environ["ORACLE_LOAD_PLUGINS"] == "*":  # every installed plugin
        del environ["ORACLE_LOAD_PLUGINS"]
    result = CliRunner().invoke(main, list(args), env=environ, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stderr


def one_line(code: int, err: str) -> str:
    assert code in (1, 2), err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("oracle: ")
    return lines[0]


def test_an_unreachable_postgres_names_the_url_and_the_fix(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://someone:hunter2@127.0.0.1:1/x"
    line = one_line(*run(tmp_path, "threads", ORACLE_DATABASE_URL=url))
    assert "ORACLE_DATABASE_URL" in line and "127.0.0.1:1/x" in line
    assert "unset ORACLE_DATABASE_URL" in line
    assert "hunter2" not in line


def test_an_oracle_home_under_a_file_names_oracle_home(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("")
    line = one_line(*run(a_file / "home", "threads"))
    assert "ORACLE_HOME" in line and "set ORACLE_HOME to a folder" in line


def unwritable_home(tmp_path: Path) -> Path:
    """A folder that cannot be created: under a read-only one, or (as root) under /proc."""
    if sys.platform == "win32":
        pytest.skip("no read-only folder to make")
    if os.geteuid() == 0:  # root writes anywhere but /proc
        return Path("/proc/oracle-test-home")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    return locked / "home"


@pytest.mark.parametrize(
    "command", [("threads",), ("search", "weather"), ("ask", "--model", "demo", "hi")]
)
def test_an_oracle_home_that_cannot_be_created_names_oracle_home(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    line = one_line(*run(unwritable_home(tmp_path), *command, ORACLE_LOAD_PLUGINS="*"))
    assert line.startswith("oracle: ORACLE_HOME: cannot create")
    assert "set ORACLE_HOME to a folder" in line


def test_a_database_folder_that_cannot_be_created_is_a_store_error(tmp_path: Path) -> None:
    from oracle_core.store.sqlite.connect import connect_sqlite
    from oracle_core.store.unavailable import StoreUnavailableError

    a_file = tmp_path / "file"
    a_file.write_text("")
    with pytest.raises(StoreUnavailableError, match="ORACLE_HOME: cannot create the database"):
        connect_sqlite(a_file / "home" / "oracle.db")


def test_a_bad_embedding_model_names_the_setting_and_the_fix(tmp_path: Path) -> None:
    pytest.importorskip("litellm")
    code, err = run(
        tmp_path,
        "search",
        "weather",
        ORACLE_EMBEDDING_MODEL="nosuch/model",
        ORACLE_LOAD_PLUGINS="*",
    )
    line = one_line(code, err)
    assert "ORACLE_EMBEDDING_MODEL='nosuch/model'" in line
    assert "none for lexical search" in line


def test_the_embedding_path_reads_litellms_price_map_offline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("litellm")
    from oracle_core.capabilities.search.embeddings import LiteLLMEmbedder
    from oracle_core.errors import ConfigError

    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    with pytest.raises(ConfigError):
        LiteLLMEmbedder("nosuch/model").embed(["weather"])
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
