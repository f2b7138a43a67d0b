"""``GET /ready``: whether the server's store answers (200, else 503), public like ``/health``,
which stays liveness; what failed goes to the log, never to the anonymous caller."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from oracle_core import Settings
from oracle_core.store import MemoryCheckpointer, SQLiteCheckpointer


async def test_ready_is_200_when_the_store_answers(serve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    served = await serve(checkpointer=SQLiteCheckpointer(tmp_path / "oracle.db"), tokens=("t",))

    ready = await served.client.get("/ready")  # no token: load balancers have none

    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "store": "ok"}


NOT_DATABASES = [b"not a database at all\n", b"SQLite format 3\x00" + b"\xff" * 200, b"\x00" * 4096]


@pytest.mark.parametrize("content", NOT_DATABASES)
async def test_ready_is_503_while_the_store_cannot_be_read_and_health_stays_200(
    serve,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    content: bytes,
) -> None:
    path = tmp_path / "oracle.db"
    path.write_bytes(content)
    served = await serve(checkpointer=SQLiteCheckpointer(path))

    with caplog.at_level(logging.WARNING, "oracle_core.server"):
        ready = await served.client.get("/ready")
    health = await served.client.get("/health")

    assert ready.status_code == 503
    assert ready.json()["status"] == "unavailable"
    assert str(tmp_path) not in ready.text  # the route is public: no paths, no addresses
    assert health.status_code == 200  # liveness: the process is up
    assert "GET /ready: the store does not answer" in caplog.text
    assert str(path) in caplog.text


async def test_ready_is_503_when_postgres_does_not_answer(serve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("psycopg")
    from oracle_core.store.postgres import PostgresCheckpointer

    store = PostgresCheckpointer("postgresql://someone:hunter2@127.0.0.1:1/x", connect_timeout=1)
    # Started as a server whose database went away after `oracle serve` checked it.
    served = await serve(
        checkpointer=store, settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)})
    )

    ready = await served.client.get("/ready")

    assert ready.status_code == 503
    assert "hunter2" not in ready.text and "127.0.0.1" not in ready.text


async def test_the_openapi_document_has_the_ready_route(serve) -> None:  # type: ignore[no-untyped-def]
    served = await serve(checkpointer=MemoryCheckpointer())

    paths = (await served.client.get("/openapi.json")).json()["paths"]

    assert set(paths["/ready"]["get"]["responses"]) >= {"200", "503"}
