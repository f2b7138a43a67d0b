"""Which facets a store offers, and the error when a feature needs one it lacks.

A store must keep threads (:class:`~oracle_core.store.threads.ThreadStore`); the other four
facets are optional, each a protocol of its own: leases
(:class:`~oracle_core.store.leases.LeaseStore`), operations
(:class:`~oracle_core.store.operations.OperationStore`), credentials
(:class:`~oracle_core.store.credentials.CredentialStore`) and usage
(:class:`~oracle_core.store.usage.UsageStore`). A store offers a facet by subclassing its
protocol, or by answering :meth:`ThreadStore.facet
<oracle_core.store.threads.ThreadStore.facet>` with an object that implements it; it says it
has none by answering ``None``. The core asks with :func:`facet_of` before it uses an
optional facet, and a feature that cannot do without one asks with :func:`need`, which
raises :class:`MissingFacetError` naming the store, the facet and the feature.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, overload

from oracle_core.errors import OracleError
from oracle_core.store.credentials import CredentialStore
from oracle_core.store.leases import LeaseStore
from oracle_core.store.operations import OperationStore
from oracle_core.store.usage import UsageStore

FacetName = Literal["leases", "operations", "credentials", "usage"]
"""The names of the optional facets."""

FACETS: Mapping[FacetName, type[Any]] = MappingProxyType(
    {
        "leases": LeaseStore,
        "operations": OperationStore,
        "credentials": CredentialStore,
        "usage": UsageStore,
    }
)
"""The optional facets: each name with its protocol."""

WHAT_WITHOUT: Mapping[FacetName, str] = MappingProxyType(
    {
        "leases": "runs on one thread are kept one at a time in this process only",
        "operations": "approvals, connections, background calls and get_operation cannot be used",
        "credentials": "no connection's credential can be stored",
        "usage": "no usage is recorded, so budgets and `oracle usage` cannot be used",
    }
)
"""What an oracle does without each optional facet (docs/operators.md says the same)."""


class MissingFacetError(OracleError):
    """A feature needs a facet the oracle's store does not offer.

    Attributes:
        store: the store's class name.
        facet: the facet's name (``leases``, ``operations``, ``credentials``, ``usage``).
        feature: what needed it.
    """

    def __init__(self, store: str, facet: FacetName, feature: str) -> None:
        super().__init__(
            f"the store {store} offers no {facet} facet, which {feature} needs: give the "
            f"oracle a store that offers it (SQLite, Postgres and memory offer every facet), "
            f"or do without {feature} (without {facet}: {WHAT_WITHOUT[facet]})"
        )
        self.store = store
        self.facet = facet
        self.feature = feature


def offered(store: object, name: FacetName) -> Any:
    """The default answer of a store about facet ``name``: itself when its class
    subclasses the facet's protocol, else ``None``."""
    return store if FACETS[name] in type(store).__mro__ else None


@overload
def facet_of(store: object, name: Literal["leases"]) -> LeaseStore | None: ...
@overload
def facet_of(store: object, name: Literal["operations"]) -> OperationStore | None: ...
@overload
def facet_of(store: object, name: Literal["credentials"]) -> CredentialStore | None: ...
@overload
def facet_of(store: object, name: Literal["usage"]) -> UsageStore | None: ...
def facet_of(store: object, name: FacetName) -> Any:
    """``store``'s facet ``name``, or ``None`` when it offers none.

    A store that defines ``facet(name)`` (every subclass of ``ThreadStore`` inherits one)
    is asked; any other object offers the facets whose protocols its class subclasses.
    """
    ask = getattr(store, "facet", None)
    return ask(name) if callable(ask) else offered(store, name)


@overload
def need(store: object, name: Literal["leases"], feature: str) -> LeaseStore: ...
@overload
def need(store: object, name: Literal["operations"], feature: str) -> OperationStore: ...
@overload
def need(store: object, name: Literal["credentials"], feature: str) -> CredentialStore: ...
@overload
def need(store: object, name: Literal["usage"], feature: str) -> UsageStore: ...
def need(store: object, name: FacetName, feature: str) -> Any:
    """``store``'s facet ``name``, for ``feature`` (named in the error).

    Raises:
        MissingFacetError: when the store offers no such facet.
    """
    found = facet_of(store, name)
    if found is None:
        raise MissingFacetError(type(store).__name__, name, feature)
    return found
