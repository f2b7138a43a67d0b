"""``oracle search`` run as a subprocess against real distributions on the path."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import SitePackages, plugin_code

pytestmark = pytest.mark.slow  # runs subprocesses: `pytest -m 'not slow'` skips it


def run_search(
    site: SitePackages,
    *args: str,
    stdin: str | None = None,
    probe: bool = False,
    semantic: bool = False,
) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "PYTHONPATH": str(site.root),
        "ORACLE_HOME": str(site.root / "home"),
        "ORACLE_LOAD_PLUGINS": "weather,calendar,audit",
        "ORACLE_EMBEDDING_MODEL": "none",  # lexical: the same ranking with or without wordllama
    }
    if semantic:  # the default install: wordllama's offline embeddings
        del environ["ORACLE_EMBEDDING_MODEL"]
    command = [sys.executable, "-m", "oracle_core", "search", *args]
    if probe:  # report whether litellm was imported, after the command ran
        code = (
            "import sys\nfrom oracle_core.cli import main\n"
            f"try:\n    main({['search', *args]!r})\nexcept SystemExit:\n    pass\n"
            "print('litellm' in sys.modules, file=sys.stderr)\n"
        )
        command = [sys.executable, "-c", code]
    return subprocess.run(
        command, env=environ, input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def catalog(site: SitePackages) -> SitePackages:
    weather = 'category="information", tags=["rain", "forecast"],'
    site.add(
        "oracle-plugin-weather",
        plugin_code("weather", tools=("get_forecast",), extra_manifest=weather),
        entry_point="weather",
    )
    site.add(
        "oracle-plugin-calendar",
        plugin_code("calendar", tools=("create_event",)),
        entry_point="calendar",
    )
    site.add(
        "oracle-plugin-audit",
        plugin_code("audit", visibility="silent", tools=("audit_forecast",)),
        entry_point="audit",
    )
    return site


def test_search_prints_the_candidates_of_each_query(catalog: SitePackages) -> None:
    result = run_search(catalog, "rain forecast", "calendar", "audit forecast")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "query: rain forecast"
    assert lines[1].split() == ["#", "SCORE", "PLUGIN", "TOOLS", "MATCH", "SUMMARY"]
    assert lines[2].split()[2:4] == ["weather", "get_forecast"]
    rows = [line.split() for line in lines if line.startswith("  ") and line.split()[0].isdigit()]
    assert "audit" not in [row[2] for row in rows]  # silent: never found, though its tool matches
    assert "query: calendar" in lines
    assert lines[lines.index("query: calendar") + 2].split()[2] == "calendar"


def test_search_json_prints_one_object_a_line_with_scores(catalog: SitePackages) -> None:
    result = run_search(catalog, "--json", "weather forecast", "tell me a joke")

    assert result.returncode == 0, result.stderr
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert first["query"] == "weather forecast"
    top = first["results"][0]
    assert {k: top[k] for k in ("name", "visibility", "loaded", "tools")} == {
        "name": "weather",
        "visibility": "on-demand",
        "loaded": False,
        "tools": ["get_forecast"],
    }
    assert top["score"] > 0
    assert second["results"] == []
    assert "No capability fits" in second["note"]


def test_search_reads_one_query_a_line_from_stdin(catalog: SitePackages) -> None:
    result = run_search(catalog, "--json", "--limit", "1", "-", stdin="forecast\n\ncalendar\n")

    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(x["query"], [r["name"] for r in x["results"]]) for x in lines] == [
        ("forecast", ["weather"]),
        ("calendar", ["calendar"]),
    ]


def test_search_does_not_import_litellm(catalog: SitePackages) -> None:
    result = run_search(catalog, "forecast", probe=True)

    assert result.stderr.strip().endswith("False"), result.stderr
    assert "weather" in result.stdout


def test_explain_shows_the_fields_and_words_that_matched_and_the_score_parts(
    catalog: SitePackages,
) -> None:
    result = run_search(catalog, "--explain", "rain forecast")

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "weather: lexical +" in out and "semantic +" in out
    assert "word evidence" in out
    assert "tags: rain, forecast" in out
    assert "tool:get_forecast.name: forecast" in out


def test_json_explain_adds_an_explain_object_to_each_candidate(catalog: SitePackages) -> None:
    result = run_search(catalog, "--json", "--explain", "rain forecast", semantic=True)

    assert result.returncode == 0, result.stderr
    top = json.loads(result.stdout.splitlines()[0])["results"][0]
    assert top["name"] == "weather" and top["match"] in ("strong", "weak")
    explain = top["explain"]
    assert set(explain) >= {"lexical", "semantic", "words", "evidence", "cosine", "closest"}
    assert explain["words"]["tags"] == ["rain", "forecast"]
    assert explain["cosine"] is not None and explain["closest"]["field"]


def test_explain_with_the_semantic_ranker_does_not_import_litellm(catalog: SitePackages) -> None:
    result = run_search(catalog, "--explain", "forecast", probe=True, semantic=True)

    assert result.stderr.strip().endswith("False"), result.stderr
    assert "weather" in result.stdout


def test_neither_import_oracle_core_nor_oracle_help_imports_wordllama() -> None:
    code = (
        "import sys\nimport oracle_core\nfrom oracle_core.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('wordllama' in sys.modules, 'litellm' in sys.modules, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )

    assert result.stderr.strip().splitlines()[-1] == "False False", result.stderr
