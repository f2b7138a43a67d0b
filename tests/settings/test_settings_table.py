"""The settings table is the one place a setting is defined: the loader, the run limits, the
model-call defaults, the known variable names and the tables of oracle.toml all read it."""

from __future__ import annotations

import dataclasses

import pytest

from oracle_core.settings import Settings
from oracle_core.settings.reading import TABLES, TABLES_OF_TABLES
from oracle_core.settings.table import SETTINGS, by_variable, of_owner
from oracle_core.settings.tables import CORE_TABLES
from oracle_core.settings.variables import KNOWN_VARIABLES, unknown_variables
from oracle_core.values.limits import RunLimits

_SETTINGS_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
_LIMIT_FIELDS = {f.name: f for f in dataclasses.fields(RunLimits)}


def test_every_variable_and_every_name_of_an_owner_is_in_the_table_once() -> None:
    variables = [s.variable for s in SETTINGS if s.variable]
    keys = [(s.owner, s.name) for s in SETTINGS]

    assert len(variables) == len(set(variables))
    assert len(keys) == len(set(keys))


def test_every_field_of_the_settings_is_a_row_with_the_fields_default() -> None:
    rows = {s.name: s for s in of_owner("settings")}
    fields = set(_SETTINGS_FIELDS) - {"env", "run_limits"}

    assert set(rows) == fields
    for name, row in rows.items():
        field = _SETTINGS_FIELDS[name]
        if field.default is not dataclasses.MISSING:
            assert field.default == row.default, name


def test_every_run_limit_is_a_row_with_its_default() -> None:
    rows = {s.name: s for s in of_owner("run_limits")}

    assert set(rows) == set(_LIMIT_FIELDS)
    for name, row in rows.items():
        assert _LIMIT_FIELDS[name].default == row.default, name


def test_the_settings_read_from_an_empty_environment_are_the_defaults() -> None:
    read = Settings.from_env({"ORACLE_HOME": "/tmp/oracle-home"})

    assert read == Settings(home=read.home)


@pytest.mark.parametrize("row", [s for s in SETTINGS if s.kind in ("int", "float")])
def test_a_number_out_of_its_range_is_refused_naming_its_variable(row: object) -> None:
    from oracle_core.errors import ConfigError
    from oracle_core.settings.environment import read_variable
    from oracle_core.settings.setting import Setting

    assert isinstance(row, Setting) and row.variable
    with pytest.raises(ConfigError, match=row.variable):
        read_variable({row.variable: "-1"}, row)


def test_the_known_variables_and_tables_come_from_the_table() -> None:
    assert "ORACLE_TIER1_BUDGET" in KNOWN_VARIABLES  # was missing from the list kept by hand
    assert unknown_variables({"ORACLE_TIER1_BUDGET": "500"}) == []
    assert (*TABLES_OF_TABLES, *TABLES) == tuple(s.name for s in of_owner("oracle.toml"))
    assert [t.name for t in CORE_TABLES] == [s.name for s in of_owner("oracle.toml")]


def test_a_variable_is_found_by_its_name() -> None:
    assert by_variable("ORACLE_MAX_STEPS").name == "max_steps"
    with pytest.raises(KeyError):
        by_variable("ORACLE_MODLE")


def test_the_serve_options_read_the_variables_of_the_table_with_its_defaults() -> None:
    import click

    from oracle_core.cli.serve import serve_command

    assert isinstance(serve_command, click.Command)
    checked = 0
    for param in serve_command.params:
        if not isinstance(param.envvar, str) or param.envvar in ("ORACLE_MODEL", "ORACLE_API_BASE"):
            continue
        row = by_variable(param.envvar)
        assert row.owner == "serve" and row.name == param.name, param.envvar
        if row.default is not None and not isinstance(row.default, tuple):
            assert param.default == row.default, param.envvar
        checked += 1
    assert checked == len([s for s in of_owner("serve") if s.variable != "ORACLE_API_TOKEN"])
