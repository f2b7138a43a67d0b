"""The ``oracle_core.server`` face: its names work, and are imported only when used."""

from __future__ import annotations

import json
import subprocess
import sys

import oracle_core.server
from oracle_core.server.app import create_app
from oracle_core.server.auth import BearerAuth, parse_tokens
from oracle_core.server.limits import Limits
from oracle_core.values.loopback import is_loopback_host


def test_every_public_name_is_the_defining_modules() -> None:
    from oracle_core.server import BearerAuth as face_auth
    from oracle_core.server import Limits as face_limits
    from oracle_core.server import create_app as face_create_app
    from oracle_core.server import is_loopback
    from oracle_core.server import parse_tokens as face_parse

    assert (face_auth, face_limits, face_create_app, face_parse, is_loopback) == (
        BearerAuth,
        Limits,
        create_app,
        parse_tokens,
        is_loopback_host,
    )
    assert sorted(dir(oracle_core.server)) == sorted(oracle_core.server.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        oracle_core.server.nothing_here  # noqa: B018
    except AttributeError as error:
        assert "nothing_here" in str(error)
    else:
        raise AssertionError("no AttributeError")


def test_the_mcp_export_imports_no_fastapi_and_no_router() -> None:
    script = (
        "import json, sys\n"
        "import oracle_core.server.mcp.export\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "    if m == 'fastapi' or m.startswith(('fastapi.', 'oracle_core.server.')))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )

    assert json.loads(done.stdout) == [
        "oracle_core.server.mcp",
        "oracle_core.server.mcp.export",
        "oracle_core.server.mcp.surface",
    ]
