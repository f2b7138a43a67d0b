"""A setting of the operator: the row type of the settings table (:mod:`oracle_core.settings.table`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal[
    "text", "secret", "names", "flag", "int", "float", "choice", "url", "database_url",
    "path", "table", "tables",
]  # fmt: skip
"""How a setting's value is read: ``text`` as given (empty is unset), ``secret`` the same but
never shown, ``names`` a comma list, ``flag`` an on/off switch, ``int`` and ``float`` numbers
in a range, ``choice`` one of :attr:`Setting.choices`, ``url`` an http(s) URL of a server,
``database_url`` a ``postgresql://`` URL, ``path`` a folder; ``table`` and ``tables`` are
``oracle.toml`` tables (one table, or one table per name: ``[plugins.<name>]``)."""

Owner = Literal[
    "settings", "run_limits", "check", "oracle.toml", "serve", "telemetry", "credentials",
    "testing", "plugins",
]  # fmt: skip
"""What reads a setting: ``settings`` a field of :class:`~oracle_core.settings.Settings` of
the same name; ``run_limits`` a field of :class:`~oracle_core.values.limits.RunLimits`
(``Settings.run_limits``); ``check`` checked with the settings and read again where it is
used; ``oracle.toml`` a table of the file, read by :mod:`oracle_core.settings.tables`; the
others are read by that part of the oracle (``oracle serve``, telemetry, the credential
vault, the test harness, plugins' configuration) and listed here so they are known and
documented."""


@dataclass(frozen=True)
class Setting:
    """One operator setting.

    Attributes:
        name: its name: the field it sets (of ``Settings`` or ``RunLimits``, see
            :data:`Owner`), or the table's name for an ``oracle.toml`` table.
        help: what it does, as the meaning column of docs/operators.md shows it (Markdown).
        variable: its environment variable, if it has one.
        toml: its ``oracle.toml`` key, if it has one (``models."*".timeout``).
        kind: how its value is read (:data:`Kind`).
        default: its value when unset (``None``: unset means none).
        shown_default: the default column of the docs, when the value alone does not say it.
        owner: what reads it (:data:`Owner`).
        unit: what a number counts, for messages (``seconds``).
        minimum: the smallest number allowed.
        positive: a number must be above zero.
        choices: the values a ``choice`` takes.
        page: the docs page whose settings table lists it (``None``: none does).
        option: the command-line option that overrides it (``--api-base``), if one does.
    """

    name: str
    help: str
    variable: str | None = None
    toml: str | None = None
    kind: Kind = "text"
    default: object = None
    shown_default: str = ""
    owner: Owner = "settings"
    unit: str = ""
    minimum: float | None = None
    positive: bool = False
    choices: tuple[str, ...] = ()
    page: str | None = "operators.md"
    option: str | None = None

    @property
    def given_as(self) -> str:
        """How a message names where the value was given: ``ORACLE_API_BASE or --api-base``."""
        where = self.variable or self.name
        return f"{where} or {self.option}" if self.option else where
