"""An answer checked against an output schema within a bound of time and work.

jsonschema as it comes would check an answer for as long as the schema makes it: a schema
whose ``$defs`` recurse through ``anyOf`` branches, given an answer 16 arrays deep, took two
minutes and gigabytes (every branch's every error is kept); a ``pattern`` matched with
``re`` can backtrack for minutes holding the interpreter lock; and its default registry
fetches a ``$ref`` to any URL. The validator made here for one check:

- resolves references inside the schema only: its registry refuses every retrieval, so no
  URL is fetched and no file read, whatever the schema says;
- spends one step of a budget on every keyword it applies and looks at the clock there:
  past :data:`MAX_STEPS` steps or its time limit the check stops, with
  :class:`CheckBoundError`;
- matches ``pattern``, ``patternProperties`` and the patterns ``additionalProperties``
  reads with the ``regex`` module and the time that is left (``regex`` lets other threads
  run while it matches);
- keeps the first error of each ``anyOf``/``oneOf`` branch, not all of them, and finds
  repeated ``uniqueItems`` by hashing, not by comparing every pair.

Call it from a worker thread (``run/output.py`` does): it is bounded, not quick.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

MAX_STEPS = 1_000_000
"""Keywords applied in one check (a legit answer of a megabyte takes some hundred thousand)."""

CHECK_SECONDS = 5.0
"""Seconds one check may take."""

_ERRORS_READ = 64  # errors read to choose the one told; the rest are never made
_GIVE_WAY = 64  # keywords between two moments the check lets other threads run


class CheckBoundError(Exception):
    """A check went past its bound (``limit`` says which) and was stopped."""

    def __init__(self, limit: str) -> None:
        super().__init__(limit)
        self.limit = limit


@dataclass
class _Budget:
    deadline: float
    steps: int = MAX_STEPS
    seconds: float = CHECK_SECONDS
    spent: int = field(default=0)

    def spend(self) -> None:
        self.spent += 1
        if not self.spent % _GIVE_WAY:
            # The interpreter lock is let go now, not when another thread has waited 5 ms
            # for it: the event loop takes it back at once after each socket call.
            time.sleep(0)
        if self.spent > self.steps:
            raise CheckBoundError(f"the check went past {self.steps:,} schema keywords")
        if time.monotonic() > self.deadline:
            raise CheckBoundError(f"the check went past {self.seconds:g} s")

    def left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise CheckBoundError(f"the check went past {self.seconds:g} s")
        return left


def answer_problem(
    schema: Mapping[str, Any],
    value: Any,
    *,
    seconds: float = CHECK_SECONDS,
    steps: int = MAX_STEPS,
) -> str | None:
    """Where ``value`` breaks ``schema`` (``at $.path: message``), or ``None`` if it fits.

    Raises:
        CheckBoundError: the check went past ``steps`` keywords or ``seconds``.
    """
    from jsonschema import validators
    from jsonschema.exceptions import best_match

    budget = _Budget(time.monotonic() + seconds, steps, seconds)
    base = validators.validator_for(schema)
    keywords = {name: _spending(budget, check) for name, check in base.VALIDATORS.items()}
    keywords.update(_bounded_keywords(budget))
    checker = validators.extend(base, keywords)(schema, registry=local_registry())
    try:
        error = best_match(islice(checker.iter_errors(value), _ERRORS_READ))
    except RecursionError:
        raise CheckBoundError("the schema's references loop without end") from None
    except CheckBoundError:
        raise
    except Exception as error:  # a reference the registry refused, or one that breaks
        if type(error).__module__.split(".")[0] in ("referencing", "jsonschema"):
            raise CheckBoundError(
                f"the schema has a reference that cannot be resolved ({error})"
            ) from None
        raise
    except BaseException as failure:
        # The same loop, where the recursion limit was reached inside rpds-py (referencing's
        # Rust maps): older releases turn that RecursionError into a pyo3 PanicException,
        # which derives from BaseException.
        if type(failure).__name__ == "PanicException" and "RecursionError" in str(failure):
            raise CheckBoundError("the schema's references loop without end") from None
        raise
    return None if error is None else f"at {error.json_path}: {error.message}"


def local_registry() -> Any:
    """A ``referencing.Registry`` for a jsonschema validator that resolves references
    inside the schema only: every retrieval is refused, so no URL is fetched and no file
    read (jsonschema's default registry fetches any URL a ``$ref`` names)."""
    from referencing import Registry
    from referencing.exceptions import NoSuchResource

    def refuse(uri: str) -> Any:
        raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # attrs fields, untyped

    return Registry(retrieve=refuse)  # type: ignore[call-arg]


Keyword = Callable[[Any, Any, Any, Mapping[str, Any]], Any]


def _spending(budget: _Budget, check: Keyword) -> Keyword:
    def keyword(validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]) -> Any:
        budget.spend()
        return check(validator, value, instance, schema)

    return keyword


def _bounded_keywords(budget: _Budget) -> dict[str, Keyword]:
    import regex
    from jsonschema.exceptions import ValidationError

    def search(pattern: str, text: str) -> bool:
        budget.spend()
        try:
            return regex.search(pattern, text, timeout=budget.left()) is not None
        except TimeoutError:
            raise CheckBoundError(f"the check went past {budget.seconds:g} s") from None

    def pattern(validator: Any, wanted: str, instance: Any, schema: Any) -> Iterator[Any]:
        budget.spend()
        if validator.is_type(instance, "string") and not search(wanted, instance):
            yield ValidationError(f"{instance!r} does not match {wanted!r}")

    def pattern_properties(validator: Any, wanted: Any, instance: Any, schema: Any) -> Any:
        budget.spend()
        if not validator.is_type(instance, "object"):
            return
        for key, subschema in wanted.items():
            for name, value in instance.items():
                if search(key, name):
                    yield from validator.descend(value, subschema, path=name, schema_path=key)

    def additional(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
        budget.spend()
        if not validator.is_type(instance, "object"):
            return
        named = schema.get("properties", {})
        keys = list(schema.get("patternProperties", {}))
        extras = [
            name
            for name in instance
            if name not in named and not any(search(k, name) for k in keys)
        ]
        if validator.is_type(extra, "object"):
            for name in extras:
                yield from validator.descend(instance[name], extra, path=name)
        elif not extra and extras:
            listed = ", ".join(repr(name) for name in sorted(extras))
            if keys:
                verb = "does" if len(extras) == 1 else "do"
                joined = ", ".join(repr(k) for k in sorted(keys))
                yield ValidationError(f"{listed} {verb} not match any of the regexes: {joined}")
            else:
                verb = "was" if len(extras) == 1 else "were"
                yield ValidationError(
                    f"Additional properties are not allowed ({listed} {verb} unexpected)"
                )

    def any_of(validator: Any, branches: Any, instance: Any, schema: Any) -> Iterator[Any]:
        budget.spend()
        firsts = []
        for index, subschema in enumerate(branches):
            first = next(iter(validator.descend(instance, subschema, schema_path=index)), None)
            if first is None:
                return
            firsts.append(_shallow(first))
        yield ValidationError(
            f"{instance!r} is not valid under any of the given schemas", context=firsts
        )

    def one_of(validator: Any, branches: Any, instance: Any, schema: Any) -> Iterator[Any]:
        budget.spend()
        firsts, fitting = [], []
        for index, subschema in enumerate(branches):
            first = next(iter(validator.descend(instance, subschema, schema_path=index)), None)
            if first is None:
                fitting.append(subschema)
                if len(fitting) > 1:
                    shown = ", ".join(repr(each) for each in fitting)
                    yield ValidationError(f"{instance!r} is valid under each of {shown}")
                    return
            else:
                firsts.append(_shallow(first))
        if not fitting:
            yield ValidationError(
                f"{instance!r} is not valid under any of the given schemas", context=firsts
            )

    def unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
        budget.spend()
        if unique and validator.is_type(instance, "array"):
            keys = [_key(item) for item in instance]
            if len(set(keys)) < len(keys):
                yield ValidationError(f"{instance!r} has non-unique elements")

    return {
        "pattern": pattern,
        "patternProperties": pattern_properties,
        "additionalProperties": additional,
        "anyOf": any_of,
        "oneOf": one_of,
        "uniqueItems": unique_items,
    }


def _shallow(error: Any) -> Any:
    """``error`` without the errors of its own branches: one level is kept to say why, and
    a tree of every branch's errors grew as fast as the branches (gigabytes)."""
    error.context = []
    error.args = error.args[:1]  # jsonschema keeps the context in the args too
    return error


def _key(value: Any) -> Any:
    """A hashable stand-in equal exactly when jsonschema calls two JSON values equal
    (``1`` and ``1.0`` are; ``true`` and ``1`` are not; an object's key order does not count)."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(_key(item) for item in value))
    if isinstance(value, Mapping):
        return ("object", frozenset((k, _key(v)) for k, v in value.items()))
    return ("other", repr(value))
