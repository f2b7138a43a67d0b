"""``search_capabilities`` and the bounded ``list_capabilities``: what the model reads back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import MakeOracle
from support import CodePlugin

from oracle_core.authoring.manifest import Example, PluginManifest
from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.meta_tools import (
    MAX_LOAD_NAMES,
    META_TOOL_SCHEMAS,
    RESULT_TOKEN_BUDGET,
    list_capabilities,
    load_capability,
)
from oracle_core.capabilities.meta_tools.finding import search_capabilities
from oracle_core.capabilities.search import (
    Analyzer,
    CapabilitySearch,
    LiteLLMEmbedder,
    split_clauses,
)
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.registry import Plugin, Registry
from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.values.tokens import count_json_tokens, count_tokens


def _never(**_: Any) -> Any:
    raise AssertionError("not called")


def make_tool(name: str, description: str, visibility: str | None = None) -> Tool:
    parameters = {"type": "object", "properties": {"city": {"type": "string"}}}
    return Tool(name, description, parameters, _never, visibility)  # type: ignore[arg-type]


def make_plugin(name: str, summary: str, *tools: Tool, **manifest: Any) -> Plugin:
    manifest.setdefault("when_to_use", [summary])
    fields = PluginManifest(name=name, summary=summary, **manifest)
    return Plugin(fields, PluginSource(name=name), list(tools))


def small_catalog() -> Registry:
    return Registry(
        plugins={
            p.name: p
            for p in (
                make_plugin(
                    "weather",
                    "Current weather and forecasts for any city.",
                    make_tool("get_forecast", "The forecast of a city for the next days."),
                    make_tool("get_alerts", "Storm warnings in force."),
                    make_tool("weather_debug", "Internal weather debugging.", "silent"),
                    category="information",
                    tags=["forecast", "rain"],
                    examples=[Example(user="will it rain in Paris tomorrow?", tool="get_forecast")],
                ),
                make_plugin(
                    "calendar",
                    "Create, move and list calendar events.",
                    make_tool("create_event", "Add a meeting or appointment to the calendar."),
                    category="productivity",
                ),
                make_plugin(
                    "memory",
                    "Durable memory across conversations.",
                    make_tool("save_memory", "Remember a fact about the user."),
                    visibility="always",
                ),
                make_plugin(
                    "audit",
                    "Audit log of every forecast and calendar change.",
                    make_tool("audit_log", "Write the audit log of a forecast."),
                    visibility="silent",
                ),
            )
        }
    )


def search_json(registry: Registry, *queries: str, loaded: tuple[str, ...] = ()) -> Any:
    outcome = search_capabilities(CapabilitySearch(registry), loaded, {"queries": list(queries)})
    return json.loads(outcome.content)


def names(result: dict[str, Any]) -> list[str]:
    return [r["name"] for r in result["results"]]


# -- search_capabilities ---------------------------------------------------------------------


def test_search_returns_each_query_in_order_with_the_matching_tools() -> None:
    found = search_json(small_catalog(), "forecast for Paris", "add a meeting to my calendar")

    assert [item["query"] for item in found] == [
        "forecast for Paris",
        "add a meeting to my calendar",
    ]
    assert found[0]["results"][0] == {
        "name": "weather",
        "summary": "Current weather and forecasts for any city.",
        "visibility": "on-demand",
        "loaded": False,
        "tools": ["get_forecast"],
        "match": "strong",
    }
    assert names(found[1])[0] == "calendar"
    assert found[1]["results"][0]["tools"] == ["create_event"]


def test_loaded_is_true_for_always_and_loaded_plugins() -> None:
    found = search_json(small_catalog(), "forecast", "remember a fact", loaded=("weather",))

    assert found[0]["results"][0]["loaded"] is True
    assert found[1]["results"][0] == {
        "name": "memory",
        "summary": "Durable memory across conversations.",
        "visibility": "always",
        "loaded": True,
        "tools": ["save_memory"],
        "match": "strong",
    }


def test_a_query_nothing_fits_gets_no_results_and_a_note() -> None:
    found = search_json(small_catalog(), "tell me a joke about penguins")

    assert found[0]["results"] == []
    assert "No capability fits this query" in found[0]["note"]


def test_silent_plugins_and_silent_tools_are_never_found() -> None:
    found = search_json(small_catalog(), "audit log", "weather debugging internal")

    assert "audit" not in names(found[0])
    assert all("weather_debug" not in r["tools"] for item in found for r in item["results"])


def test_at_most_six_candidates_best_first() -> None:
    plugins = [
        make_plugin(
            f"convert-{i}",
            f"Convert units of kind {i}.",
            make_tool(f"convert_{i}", "Convert units."),
        )
        for i in range(12)
    ] + [
        make_plugin(f"other-{i}", f"Something else number {i}.", make_tool(f"other_{i}", "Other."))
        for i in range(40)
    ]
    found = search_json(Registry(plugins={p.name: p for p in plugins}), "convert units")

    assert len(found[0]["results"]) == 6
    assert all(name.startswith("convert-") for name in names(found[0]))


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"queries": []}, "The list was empty"),
        ({"queries": ["a", "b", "c", "d", "e"]}, "You sent 5, over the limit of 4"),
        ({"query": "weather"}, 'takes {"queries": ["task", ...]}: 1 to 4'),
        ({"queries": [1, 2]}, 'takes {"queries": ["task", ...]}: 1 to 4'),
    ],
)
def test_bad_search_arguments_name_the_limit_and_the_fix(arguments: Any, expected: str) -> None:
    outcome = search_capabilities(CapabilitySearch(small_catalog()), (), arguments)

    assert outcome.error
    error = json.loads(outcome.content)["error"]
    assert expected in error
    assert "Nothing was searched" in error


def test_one_query_given_as_a_string_is_searched() -> None:
    outcome = search_capabilities(CapabilitySearch(small_catalog()), (), {"queries": "forecast"})

    assert names(json.loads(outcome.content)[0])[0] == "weather"


async def test_the_model_searches_then_loads_what_it_found(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(
        CodePlugin("weather", summary="Current weather and forecasts.", category="information"),
        CodePlugin("audit", visibility="silent"),
    )
    fake_openai.script(
        Reply.call("search_capabilities", {"queries": ["weather forecast"]}),
        Reply.call("load_capability", {"names": ["weather"]}),
        Reply.text("ok"),
    )

    await oracle.run("t", "what is the weather?")

    first = fake_openai.requests[0]
    assert first.tool_names == [
        "list_capabilities",
        "load_capability",
        "search_capabilities",
        "audit_tool",
    ]
    found = json.loads(fake_openai.requests[1].tool_results[-1])
    assert found == [
        {
            "query": "weather forecast",
            "results": [
                {
                    "name": "weather",
                    "summary": "Current weather and forecasts.",
                    "visibility": "on-demand",
                    "loaded": False,
                    "tools": ["weather_tool"],
                    "match": "strong",
                }
            ],
        }
    ]
    assert "weather_tool" in fake_openai.requests[2].tool_names


def test_the_three_meta_tools_cost_at_most_130_tokens() -> None:
    assert [s["function"]["name"] for s in META_TOOL_SCHEMAS] == [
        "list_capabilities",
        "load_capability",
        "search_capabilities",
    ]
    assert count_json_tokens(list(META_TOOL_SCHEMAS)) <= 130


# -- the index cache ---------------------------------------------------------------------------


def test_an_unchanged_catalog_loads_the_cached_index(tmp_path: Path) -> None:
    CapabilitySearch(small_catalog(), tmp_path).search(["forecast"])

    again = CapabilitySearch(small_catalog(), tmp_path)

    assert again.index.from_cache
    assert [c.plugin.name for c in again.search(["forecast"])[0]] == ["weather"]


def test_a_changed_plugin_rebuilds_the_index(tmp_path: Path) -> None:
    CapabilitySearch(small_catalog(), tmp_path).search(["forecast"])
    plugins = dict(small_catalog().plugins)
    plugins["calendar"] = make_plugin(
        "calendar", "Book flights and hotels.", make_tool("book_flight", "Book a flight.")
    )

    changed = CapabilitySearch(Registry(plugins=plugins), tmp_path)

    assert not changed.index.from_cache
    assert changed.search(["book a flight"])[0][0].plugin.name == "calendar"
    assert CapabilitySearch(Registry(plugins=plugins), tmp_path).index.from_cache


def test_the_index_is_built_on_the_first_search_not_with_the_oracle(
    make_oracle: MakeOracle, tmp_path: Path
) -> None:
    make_oracle(CodePlugin("weather"))

    assert not (tmp_path / "home" / "search").exists()


# -- an embeddings model through litellm -------------------------------------------------------


def test_a_litellm_embedding_model_ranks_with_the_fake_servers_vectors(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    embedder = LiteLLMEmbedder("openai/fake-embedding", api_base=fake_openai.url)
    search = CapabilitySearch(small_catalog(), tmp_path, embedder)

    found = search.search(["storm warnings"])

    assert found[0][0].plugin.name == "weather"
    assert found[0][0].tools[0] == "get_alerts"
    assert ["storm warnings"] in fake_openai.embedding_inputs  # the query was embedded
    indexed = [text for batch in fake_openai.embedding_inputs for text in batch]
    assert not any("Audit log" in text for text in indexed)  # silent plugins are not sent
    assert CapabilitySearch(small_catalog(), tmp_path, embedder).index.from_cache


# -- bounded listing ----------------------------------------------------------------------------


def big_catalog(count: int = 4000) -> Registry:
    """``count`` plugins in 40 categories, with long texts, given in code."""
    plugins = {}
    for i in range(count):
        name = f"plugin-{i:04d}-with-a-rather-long-name"
        plugins[name] = make_plugin(
            name,
            f"Does task number {i} very well, with many words to make the summary long " * 2,
            make_tool(f"tool_{i}_with_a_long_descriptive_name", f"Runs task {i} and reports back."),
            make_tool(f"tool_{i}_second_variant_of_the_tool", f"Also runs task {i} differently."),
            category=f"category-{i % 40}",
            tags=[f"tag{i % 7}", f"topic{i % 11}", "common"],
            visibility="always" if i < 3 else "on-demand",
        )
    return Registry(plugins=plugins)


def test_a_catalog_within_the_limit_is_listed_whole() -> None:
    listed = json.loads(list_capabilities(small_catalog(), (), {}, limit=40))

    assert [p["name"] for p in listed] == ["weather", "calendar", "memory"]


def test_past_the_limit_the_listing_shows_categories_available_plugins_and_a_hint() -> None:
    overview = json.loads(list_capabilities(small_catalog(), ("calendar",), {}, limit=2))

    assert overview["plugins"] == 3
    assert overview["categories"] == [
        {"category": "information", "count": 1},
        {"category": "productivity", "count": 1},
        {"category": "uncategorized", "count": 1},
    ]
    assert [(p["name"], p["loaded"]) for p in overview["available"]] == [
        ("calendar", True),
        ("memory", True),
    ]
    assert "more than the listing limit of 2" in overview["hint"]
    assert "search_capabilities" in overview["hint"]


def test_one_category_is_listed_on_request() -> None:
    page = json.loads(list_capabilities(small_catalog(), (), {"category": "information"}, limit=2))

    assert page["category"] == "information"
    assert [p["name"] for p in page["plugins"]] == ["weather"]
    assert (page["page"], page["pages"]) == (1, 1)
    assert "next" not in page


def test_a_large_category_is_paged_and_says_how_to_get_the_next_page() -> None:
    registry = big_catalog(400)

    first = json.loads(list_capabilities(registry, (), {"category": "category-1"}, limit=4))
    second = json.loads(
        list_capabilities(registry, (), {"category": "category-1", "page": 2}, limit=4)
    )

    assert (first["count"], first["pages"]) == (10, 3)
    assert len(first["plugins"]) == 4
    assert (
        first["next"] == 'list_capabilities({"category":"category-1","page":2}) for the next page'
    )
    assert second["plugins"][0]["name"] == "plugin-0161-with-a-rather-long-name"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"category": "informaton"}, "unknown category 'informaton' (did you mean 'information'?)"),
        ({"category": "information", "page": 3}, "has 1 page(s); ask for page 1 to 1"),
        ({"page": 0}, "page must be a whole number from 1"),
    ],
)
def test_bad_listing_arguments_are_explained(arguments: Any, expected: str) -> None:
    assert (
        expected in json.loads(list_capabilities(small_catalog(), (), arguments, limit=2))["error"]
    )


def test_no_meta_tool_result_exceeds_the_budget_at_4000_plugins() -> None:
    registry = big_catalog()
    loaded = tuple(list(registry.plugins)[3:200])
    results = [
        list_capabilities(registry, loaded, {}),
        list_capabilities(registry, loaded, {"page": 2}),
        list_capabilities(registry, loaded, {"category": "category-3"}),
        list_capabilities(registry, loaded, {"category": "category-3", "page": 3}),
        search_capabilities(
            CapabilitySearch(registry),
            loaded,
            {
                "queries": [
                    "runs task reports back " * 10,
                    "task differently",
                    "common tag3",
                    "x" * 900,
                ]
            },
        ).content,
    ]

    assert max(count_tokens(r) for r in results) <= RESULT_TOKEN_BUDGET
    overview = json.loads(results[0])
    assert sum(c["count"] for c in overview["categories"]) == 4000
    assert overview["plugins"] == 4000


def test_load_capability_still_works_past_the_listing_limit() -> None:
    outcome = load_capability(
        big_catalog(50), (), {"names": ["plugin-0010-with-a-rather-long-name"]}
    )

    assert not outcome.error
    assert outcome.loaded == ["plugin-0010-with-a-rather-long-name"]


def test_an_empty_catalog_finds_nothing() -> None:
    found = search_json(Registry(), "anything at all")

    assert found == [{"query": "anything at all", "results": [], "note": found[0]["note"]}]


def test_a_load_of_the_most_capabilities_allowed_stays_within_the_result_budget() -> None:
    catalog = big_catalog(50)
    names = [f"plugin-{i:04d}-with-a-rather-long-name" for i in range(10, 10 + MAX_LOAD_NAMES)]

    outcome = load_capability(catalog, (), {"names": names})

    assert not outcome.error and outcome.loaded == names
    assert count_tokens(outcome.content) <= RESULT_TOKEN_BUDGET
    assert all(entry["tools"] for entry in json.loads(outcome.content))


def test_a_load_of_more_than_the_limit_loads_nothing_and_names_the_limit() -> None:
    names = [f"plugin-{i:04d}-with-a-rather-long-name" for i in range(MAX_LOAD_NAMES + 1)]

    outcome = load_capability(big_catalog(50), (), {"names": names})

    assert outcome.error and outcome.loaded == []
    assert f"at most {MAX_LOAD_NAMES} capabilities at once" in json.loads(outcome.content)["error"]


def test_an_unknown_name_of_any_length_is_echoed_short() -> None:
    outcome = load_capability(big_catalog(50), (), {"names": ["x" * 100_000]})

    assert outcome.error and len(outcome.content) < 400


# -- the fit threshold weighs where a word matched ----------------------------------------------


def _catalog_with_a_word_in_parameters(word: str, tagged: bool) -> Registry:
    plugins = {}
    for i, topic in enumerate(["tides", "invoices", "glaciers"] * 10):
        description = f"Mention {word} here." if i % 10 == 0 else "A value."  # 3 plugins
        parameters = {"type": "object", "properties": {"value": {"description": description}}}
        tool = Tool(f"measure_{topic}_{i}", f"Measure {topic}.", parameters, _never)
        extra = {"tags": [word]} if tagged and i == 10 else {}
        name = f"{topic}-{i}"
        plugins[name] = make_plugin(name, f"Everything about {topic}.", tool, **extra)
    return Registry(plugins=plugins)


def test_a_generic_word_found_only_in_parameter_texts_is_no_fit() -> None:
    found = search_json(_catalog_with_a_word_in_parameters("help", tagged=False), "can you help me")

    assert found[0]["results"] == []
    assert "No capability fits this query" in found[0]["note"]


def test_the_same_word_in_what_a_plugin_is_for_is_a_fit() -> None:
    found = search_json(_catalog_with_a_word_in_parameters("help", tagged=True), "can you help me")

    # The query fits, so the plugins that only mention the word follow as weak candidates.
    assert names(found[0])[0] == "invoices-10"


def test_the_bm25_mode_ranks_by_plugin_documents_alone_and_stemming_can_be_turned_off() -> None:
    plain = CapabilitySearch(small_catalog(), analyzer=Analyzer(stem=False))

    assert plain.analyzer.terms("forecasts events") == ["forecasts", "events"]
    assert Analyzer().terms("forecasts events") == ["forecast", "event"]
    assert plain.rank(["forecast"], "bm25") == [["weather"]]
    assert plain.rank(["forecasts"], "bm25") == [["weather"]]  # "forecasts" is in the summary
    assert plain.rank(["events"], "bm25") == [["calendar"]]


# -- requests of several sentences -----------------------------------------------------------


def _catalog_where_one_topic_crowds_the_rest() -> Registry:
    plugins = {}
    for extra in ["lessons", "teachers", "costumes", "music", "history", "events", "clubs"]:
        name = f"dance-{extra}"
        tool = make_tool(f"find_dance_{extra}", f"Find folk dance {extra}, styles and studios.")
        plugins[name] = make_plugin(name, f"Folk dance {extra} and styles near you.", tool)
    for i in range(10):
        name = f"records-{i}"
        tool = make_tool(f"check_record_{i}", f"Check the status of patient record {i}.")
        plugins[name] = make_plugin(name, "Patient records.", tool)
    for topic in ["invoices", "tides", "glaciers", "trains", "stamps"] * 8:
        name = f"{topic}-{len(plugins)}"
        tool = make_tool(f"list_{topic}_{len(plugins)}", f"List {topic}.")
        plugins[name] = make_plugin(name, f"Everything about {topic}.", tool)
    plugins["hearing"] = make_plugin(
        "hearing",
        "Hearing health checks.",
        make_tool("check_tinnitus", "Check the tinnitus status of a patient."),
    )
    return Registry(plugins=plugins)


REQUEST = (
    "Find folk dance lessons and folk dance teachers with good styles and studios near me. "
    "Then check the tinnitus status of patient 67890."
)


def test_the_one_sentence_about_another_topic_is_buried_in_the_whole_request() -> None:
    plain = CapabilitySearch(_catalog_where_one_topic_crowds_the_rest())

    whole = plain.rank([REQUEST], "bm25")[0]

    assert whole.index("hearing") >= 6  # the dance plugins outrank it


def test_each_sentence_of_a_request_finds_its_plugin_near_the_top() -> None:
    found = search_json(_catalog_where_one_topic_crowds_the_rest(), REQUEST)

    assert names(found[0])[:2].count("hearing") == 1
    assert any(name.startswith("dance-") for name in names(found[0])[:2])
    hearing = next(r for r in found[0]["results"] if r["name"] == "hearing")
    assert hearing["tools"] == ["check_tinnitus"]
    assert not any(name.startswith(("invoices", "tides", "trains")) for name in names(found[0]))


@pytest.mark.parametrize(
    ("query", "sentences"),
    [
        ("convert 20 euros to dollars", ["convert 20 euros to dollars"]),
        ("Convert 20 euros. Then book a table!", ["Convert 20 euros.", "Then book a table!"]),
        ("one? two; three\nfour", ["one?", "two;", "three", "four"]),
        ("version 2.0 of e.g.the tool", ["version 2.0 of e.g.the tool"]),
        ("  .  \n\n ", ["  ."]),
        ("", []),
    ],
)
def test_a_request_is_split_into_sentences_after_their_end_and_at_line_breaks(
    query: str, sentences: list[str]
) -> None:
    assert split_clauses(query) == sentences


def test_sentences_without_search_terms_do_not_change_the_ranking() -> None:
    search = CapabilitySearch(small_catalog())

    alone = search.rank(["will it rain in Paris tomorrow?"], "lexical")
    padded = search.rank(["will it rain in Paris tomorrow? Thanks. 42!"], "lexical")

    assert padded == alone == [["weather"]]


def test_random_requests_of_many_sentences_never_fail_and_stay_bounded() -> None:
    import random

    rng = random.Random(12)
    words = ["forecast", "rain", "meeting", "calendar", ".", "!", "?", ";", "\n", "é", "42", ""]
    search = CapabilitySearch(small_catalog())
    for _ in range(200):
        query = " ".join(rng.choice(words) for _ in range(rng.randint(0, 40)))
        found = search.search([query])[0]
        assert len(found) <= 6
        assert all(c.plugin.name in {"weather", "calendar", "memory"} for c in found)
        assert search.rank([query], "fused", depth=10)[0] == search.rank([query], "lexical")[0]


class _WordHashEmbedder:
    """A deterministic bag-of-words embedder (no model): texts sharing words are close."""

    name = "word-hash-test"

    def embed(self, texts: Any) -> Any:
        import numpy as np

        rows = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in Analyzer().terms(text):
                rows[row, sum(map(ord, word)) % 64] += 1.0
        norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        return rows / norms


def test_with_an_embedder_each_sentence_still_finds_its_plugin(tmp_path: Path) -> None:
    registry = _catalog_where_one_topic_crowds_the_rest()
    search = CapabilitySearch(registry, tmp_path, _WordHashEmbedder())

    found = [c.plugin.name for c in search.search([REQUEST])[0]]
    again = CapabilitySearch(registry, tmp_path, _WordHashEmbedder())

    assert "hearing" in found[:2]
    assert again.index.from_cache
    assert [c.plugin.name for c in again.search([REQUEST])[0]] == found
    assert again.rank([REQUEST], "semantic")[0]  # the sentences' embeddings rank too
