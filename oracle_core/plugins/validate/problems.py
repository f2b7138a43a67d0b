"""The validator's vocabulary: a :class:`Problem`, and the error a plugin with problems fails with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from oracle_core.errors import ManifestError, PluginConfigError, PluginError, PluginLoadError


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a plugin.

    Attributes:
        message: the sentence shown to the operator and the plugin author.
        error: the kind of failure it makes when it is an error.
        field: the manifest field at fault, for manifest problems.
        hook: the hook whose implementation is at fault (it is then not called).
    """

    message: str
    error: type[PluginError] = PluginLoadError
    field: str | None = None
    hook: str | None = None


def plugin_error(
    problems: Sequence[Problem], *, plugin: str, distribution: str | None = None
) -> PluginError:
    """The error a plugin with ``problems`` fails with: all of them, listed in its message.

    Its type is the first problem's (so a plugin whose only problem is its manifest fails
    with a :class:`ManifestError` naming the field); ``problems`` holds every sentence.
    """
    first = problems[0]
    messages = [p.message for p in problems]
    text = messages[0] if len(messages) == 1 else _listing(messages)
    if first.error is ManifestError:
        return ManifestError(
            text, plugin=plugin, field=first.field, distribution=distribution, problems=messages
        )
    if first.error is PluginConfigError:
        return PluginConfigError(
            text, plugin=plugin, key=first.field, distribution=distribution, problems=messages
        )
    return first.error(text, plugin=plugin, distribution=distribution, problems=messages)


def _listing(messages: Sequence[str]) -> str:
    return f"has {len(messages)} problems:" + "".join(f"\n    - {m}" for m in messages)
