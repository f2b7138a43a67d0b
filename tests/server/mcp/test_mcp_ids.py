"""The MCP export takes its thread and user (``oracle mcp --thread --user``) by the one id
rule of every entry (issue 38, hole 6): a bad one is refused before any session starts."""

from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install -e '.[mcp]'")

from id_samples import bad_thread, bad_user, good_user

from oracle_core import InvalidThreadIdError, InvalidUserIdError
from oracle_core.server.mcp.export import Sessions


def test_the_mcp_sessions_refuse_a_bad_user_or_thread_and_take_good_ones(
    make_oracle: Any,
) -> None:
    rng = random.Random(71)
    oracle = make_oracle()
    for _ in range(100):
        user, _why = bad_user(rng)
        with pytest.raises(InvalidUserIdError, match=r"^user_id "):
            Sessions(oracle, "t-1", user)
        with pytest.raises(InvalidThreadIdError):
            Sessions(oracle, bad_thread(rng))
        good = good_user(rng)
        assert Sessions(oracle, None, good).user_id == good
