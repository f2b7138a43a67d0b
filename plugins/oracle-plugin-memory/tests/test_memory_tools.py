"""The memory tools as the model uses them: save, search, list, forget, per user."""

from __future__ import annotations

import pytest

from oracle_core import Oracle, ToolArgumentsError, ToolError
from oracle_core.testing import call_tool


async def test_saved_memory_is_found_by_a_search(oracle: Oracle) -> None:
    saved = await call_tool(oracle, "save_memory", {"text": "prefers metric units"})
    found = await call_tool(oracle, "search_memory", {"query": "metric"})

    assert saved["status"] == "saved"
    assert [m["text"] for m in found["memories"]] == ["prefers metric units"]
    assert found["memories"][0]["id"] == saved["memory"]["id"]


async def test_search_matches_other_forms_of_a_word(oracle: Oracle) -> None:
    await call_tool(oracle, "save_memory", {"text": "prefers metric units"})

    found = await call_tool(oracle, "search_memory", {"query": "what units do I prefer?"})

    assert [m["text"] for m in found["memories"]] == ["prefers metric units"]


async def test_search_puts_the_best_match_first(oracle: Oracle) -> None:
    await call_tool(oracle, "save_memory", {"text": "has a dog called Biscuit"})
    await call_tool(oracle, "save_memory", {"text": "allergic to peanuts"})
    await call_tool(oracle, "save_memory", {"text": "the dog Biscuit is allergic to chicken"})

    found = await call_tool(oracle, "search_memory", {"query": "Biscuit allergic chicken"})

    assert found["memories"][0]["text"] == "the dog Biscuit is allergic to chicken"
    assert len(found["memories"]) == 3


async def test_search_returns_at_most_limit_memories(oracle: Oracle) -> None:
    for city in ("Leeds", "York", "Hull"):
        await call_tool(oracle, "save_memory", {"text": f"visited {city}"})

    found = await call_tool(oracle, "search_memory", {"query": "visited", "limit": 2})

    assert len(found["memories"]) == 2


async def test_tags_are_searchable(oracle: Oracle) -> None:
    await call_tool(oracle, "save_memory", {"text": "no nuts at all", "tags": ["Diet", " food "]})

    found = await call_tool(oracle, "search_memory", {"query": "diet"})

    assert found["memories"][0]["text"] == "no nuts at all"
    assert found["memories"][0]["tags"] == ["diet", "food"]


@pytest.mark.parametrize(
    "query",
    [
        "don't",
        "C++ (again)",
        '"unbalanced',
        'say "hi" * ^',
        "NOT",
        "metric AND OR NOT units",
        "text:metric",
        "NEAR(metric units, 2)",
        "-metric +units",
        "'; DROP TABLE memory_items; --",
        "metric*",
        "{units} [metric]",
        "ünïcödé métrique 単位",
        "under_score",
    ],
)
async def test_search_text_can_never_break_the_query(oracle: Oracle, query: str) -> None:
    await call_tool(oracle, "save_memory", {"text": "prefers metric units"})

    found = await call_tool(oracle, "search_memory", {"query": query})

    assert isinstance(found["memories"], list)
    assert (await call_tool(oracle, "list_memories"))["total"] == 1


async def test_search_without_words_asks_for_keywords(oracle: Oracle) -> None:
    with pytest.raises(ToolError, match="no words to search for"):
        await call_tool(oracle, "search_memory", {"query": "?! ()"})


async def test_saving_the_same_fact_twice_keeps_one_memory(oracle: Oracle) -> None:
    first = await call_tool(oracle, "save_memory", {"text": "lives in Leeds"})
    second = await call_tool(oracle, "save_memory", {"text": "  lives in Leeds "})

    assert second["status"] == "already saved"
    assert second["memory"]["id"] == first["memory"]["id"]
    assert (await call_tool(oracle, "list_memories"))["total"] == 1


async def test_blank_text_is_refused(oracle: Oracle) -> None:
    with pytest.raises(ToolError, match="blank"):
        await call_tool(oracle, "save_memory", {"text": "   "})


async def test_overlong_text_is_refused_by_the_schema(oracle: Oracle) -> None:
    with pytest.raises(ToolArgumentsError, match="text"):
        await call_tool(oracle, "save_memory", {"text": "x" * 1001})


async def test_list_shows_newest_first_with_the_total(oracle: Oracle) -> None:
    for fact in ("first fact", "second fact", "third fact"):
        await call_tool(oracle, "save_memory", {"text": fact})

    listed = await call_tool(oracle, "list_memories", {"limit": 2})

    assert listed["total"] == 3
    assert [m["text"] for m in listed["memories"]] == ["third fact", "second fact"]
    assert listed["memories"][0]["saved_at"].endswith("Z")


async def test_forgotten_memory_is_no_longer_found(oracle: Oracle) -> None:
    saved = await call_tool(oracle, "save_memory", {"text": "lives in Leeds"})

    forgotten = await call_tool(oracle, "forget_memory", {"id": saved["memory"]["id"]})

    assert forgotten["forgotten"]["text"] == "lives in Leeds"
    assert (await call_tool(oracle, "search_memory", {"query": "Leeds"}))["memories"] == []
    assert (await call_tool(oracle, "list_memories"))["total"] == 0


async def test_forgetting_an_unknown_id_says_how_to_find_ids(oracle: Oracle) -> None:
    with pytest.raises(ToolError, match=r"no memory with id 99.*list_memories"):
        await call_tool(oracle, "forget_memory", {"id": 99})


async def test_ids_of_forgotten_memories_are_never_reused(oracle: Oracle) -> None:
    old = await call_tool(oracle, "save_memory", {"text": "lives in Leeds"})
    await call_tool(oracle, "forget_memory", {"id": old["memory"]["id"]})

    new = await call_tool(oracle, "save_memory", {"text": "lives in York"})

    assert new["memory"]["id"] != old["memory"]["id"]
    with pytest.raises(ToolError):
        await call_tool(oracle, "forget_memory", {"id": old["memory"]["id"]})
    assert (await call_tool(oracle, "list_memories"))["total"] == 1


async def test_a_user_never_sees_another_users_memories(oracle: Oracle) -> None:
    await call_tool(oracle, "save_memory", {"text": "alice prefers metric units"}, user_id="alice")

    searched = await call_tool(
        oracle, "search_memory", {"query": "alice metric units"}, user_id="bob"
    )
    listed = await call_tool(oracle, "list_memories", user_id="bob")

    assert searched["memories"] == []
    assert listed == {"total": 0, "memories": []}
    assert (await call_tool(oracle, "list_memories", user_id="alice"))["total"] == 1


async def test_a_user_cannot_forget_another_users_memory(oracle: Oracle) -> None:
    saved = await call_tool(oracle, "save_memory", {"text": "lives in Leeds"}, user_id="alice")
    memory_id = saved["memory"]["id"]

    with pytest.raises(ToolError, match=f"no memory with id {memory_id}"):
        await call_tool(oracle, "forget_memory", {"id": memory_id}, user_id="bob")

    listed = await call_tool(oracle, "list_memories", user_id="alice")
    assert [m["id"] for m in listed["memories"]] == [memory_id]


async def test_the_same_fact_is_separate_for_each_user(oracle: Oracle) -> None:
    alice = await call_tool(oracle, "save_memory", {"text": "likes tea"}, user_id="alice")
    bob = await call_tool(oracle, "save_memory", {"text": "likes tea"}, user_id="bob")

    assert bob["status"] == "saved"
    assert bob["memory"]["id"] != alice["memory"]["id"]


async def test_memories_are_shared_across_a_users_threads(oracle: Oracle) -> None:
    await call_tool(oracle, "save_memory", {"text": "lives in Leeds"}, thread="monday")

    found = await call_tool(oracle, "search_memory", {"query": "Leeds"}, thread="friday")

    assert [m["text"] for m in found["memories"]] == ["lives in Leeds"]
