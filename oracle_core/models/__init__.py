"""Models the run loop can talk to: the :class:`Model` interface and its implementations."""

from oracle_core.models.base import Model, ModelError

__all__ = ["Model", "ModelError"]
