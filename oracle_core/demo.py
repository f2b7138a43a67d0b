"""The offline stand-in model used when no ``ORACLE_MODEL`` is set."""

from __future__ import annotations

from oracle_core.calls import ModelRequest, ModelResponse
from oracle_core.model import Model, ModelError


class DemoModel(Model):
    """A scripted stand-in for a real model (see docs); it needs no account and no network."""

    name = "demo"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        raise ModelError("no model configured: set ORACLE_MODEL (any litellm model string)")
