"""Request options a person gives by name and text (``oracle ask -o temperature 0.2``),
checked against what the model takes and turned into values of the right type.

Which options a model takes is litellm's knowledge (``get_supported_openai_params``), asked
only when needed: an ``openai/...`` model sent directly takes :data:`PASS_THROUGH`
without importing litellm, and a provider litellm does not know is sent the option as given.
Each value is read by pydantic against its type (:data:`OPTION_TYPES`); an option without a
known type takes JSON (``-o stop '["\\n\\n"]'``), else the text itself.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from oracle_core.errors import OracleError
from oracle_core.models.completions import CALL_SETTINGS
from oracle_core.models.openai import DEMO_MODEL, PASS_THROUGH, sends_directly

_Penalty = Annotated[float, Field(ge=-2, le=2)]
_Positive = Annotated[int, Field(ge=1)]

OPTION_TYPES: Mapping[str, Any] = {
    "temperature": Annotated[float, Field(ge=0, le=2)],
    "top_p": Annotated[float, Field(ge=0, le=1)],
    "max_tokens": _Positive,
    "max_completion_tokens": _Positive,
    "seed": int,
    "stop": str | list[str],
    "presence_penalty": _Penalty,
    "frequency_penalty": _Penalty,
    "logit_bias": dict[str, Annotated[float, Field(ge=-100, le=100)]],
    "logprobs": bool,
    "top_logprobs": Annotated[int, Field(ge=0, le=20)],
    "tool_choice": Literal["auto", "none", "required"] | dict[str, Any],
    "parallel_tool_calls": bool,
    "reasoning_effort": str,
    "response_format": dict[str, Any],
    "service_tier": str,
    "store": bool,
    "user": str,
    "prompt_cache_key": str,
    "safety_identifier": str,
    "extra_headers": dict[str, str],
    "extra_body": dict[str, Any],
    "timeout": Annotated[float, Field(gt=0)],
    "num_retries": Annotated[int, Field(ge=0)],
    "retry_on": str | list[str],
}
"""The type of each option the oracle knows, as pydantic reads it."""

OWN_OPTIONS: Mapping[str, str] = {
    "stream": "the oracle streams on a terminal itself (--no-stream to wait)",
    "stream_options": "the oracle asks for usage in every stream itself",
    "tools": "the oracle sends its own tools (the gate decides them)",
    "functions": "the oracle sends its own tools (the gate decides them)",
    "function_call": "use tool_choice",
    "n": "the oracle reads one answer a call",
    "max_retries": "use --retries (or -o num_retries N)",
}
"""Options a person may not set, each with why (the oracle sets or reads them itself)."""


class ModelOptionError(OracleError, ValueError):
    """A request option given by name (``-o KEY VALUE``) that the model does not take, or
    whose value does not fit; the message names the option, the model and the fix.

    Attributes:
        option: the option's name.
        model: the model string.
    """

    def __init__(self, message: str, *, option: str, model: str) -> None:
        super().__init__(message)
        self.option = option
        self.model = model


def supported_options(model: str) -> frozenset[str] | None:
    """The request options litellm lists for ``model``; ``None`` when it does not know it."""
    from oracle_core.environment import import_litellm

    litellm = import_litellm()
    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
        found = litellm.get_supported_openai_params(model=name, custom_llm_provider=provider)
    except Exception:  # litellm cannot place the model string: it has no list to give
        return None
    return frozenset(found) if found else None


def _value(option: str, text: str, model: str) -> Any:
    annotation = OPTION_TYPES.get(option)
    value: Any = text
    if annotation is not str:
        try:
            value = json.loads(text)
        except ValueError:
            value = text  # a plain word: "auto", "low", a stop string
    if annotation is None:
        return value
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    try:
        return adapter.validate_python(value)
    except ValidationError as error:
        if value is not text:  # JSON that does not fit: the text itself may (-o stop 7)
            with contextlib.suppress(ValidationError):
                return adapter.validate_python(text)
        problem = "; ".join(e["msg"] for e in error.errors(include_url=False))
        raise ModelOptionError(
            f"-o {option} {text!r} does not fit: {problem} (for the model {model})",
            option=option,
            model=model,
        ) from None


def _check_taken(option: str, model: str, supported: frozenset[str] | None) -> None:
    if supported is None or option in supported or option in CALL_SETTINGS:
        return
    from oracle_core.settings.unknown import closest

    listed = sorted(supported - set(OWN_OPTIONS))
    near = closest(option, listed)
    hint = f" (did you mean {near}?)" if near else ""
    raise ModelOptionError(
        f"-o {option}: the model {model} does not take {option!r}{hint}; it takes "
        f"{', '.join(listed)} (litellm's list)",
        option=option,
        model=model,
    )


def model_options(model: str, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The options ``pairs`` (name, text) for ``model``, each checked and typed.

    Raises:
        ModelOptionError: an option the model does not take, one the oracle sets itself, or a
            value that does not fit its type (the message names the option and why).
    """
    names = [name.strip() for name, _ in pairs]
    for name in names:
        if name in OWN_OPTIONS:
            raise ModelOptionError(
                f"-o {name} cannot be set: {OWN_OPTIONS[name]}", option=name, model=model
            )
    direct = sends_directly(model) and all(n in PASS_THROUGH or n in CALL_SETTINGS for n in names)
    plain = model == DEMO_MODEL or direct or not names  # nothing to ask litellm
    supported = None if plain else supported_options(model)
    chosen: dict[str, Any] = {}
    for name, (_, text) in zip(names, pairs, strict=True):
        _check_taken(name, model, supported)
        chosen[name] = _value(name, text, model)
    return chosen
