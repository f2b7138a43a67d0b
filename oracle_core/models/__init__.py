"""Models the run loop can talk to: the :class:`Model` interface and its implementations.

What lives here: ``base`` (the interface), ``litellm`` and ``openai`` (the two client paths,
sharing ``completions``), ``wire`` (the only code that builds or reads the OpenAI wire shape:
messages sent, replies and streamed chunks read), ``profiles`` (one row per kind of server:
what it accepts, how it deviates), ``demo`` (the offline stand-in).

A new model client subclasses :class:`~oracle_core.models.completions.ProviderModel` and
sends :func:`~oracle_core.models.wire.wire_messages`; a new server quirk is one column or row
of :data:`~oracle_core.models.profiles.PROFILES` and its case in
``tests/test_model_profiles.py``.
"""

from oracle_core.models.base import Model, ModelError

__all__ = ["Model", "ModelError"]
