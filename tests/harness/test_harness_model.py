"""``oracle_model``: scripted replies in, every request the oracle made out."""

from __future__ import annotations

import pytest
from support import fresh_python


def test_requests_show_what_the_model_was_sent_on_each_step(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_requests="""
        import json
        import forecast_plugin
        from oracle_core.testing import run_turn


        async def test_every_step_is_recorded(oracle_factory, oracle_model):
            oracle = oracle_factory(forecast_plugin, instructions="You forecast.")
            oracle_model.reply_tool_call("load_capability", {"names": ["forecast"]})
            oracle_model.reply_tool_calls([
                ("get_forecast", {"place": "Lisbon"}),
                ("get_forecast", {"place": "Porto", "days": 1}),
            ])
            oracle_model.reply_text("Sunny in both.")

            result = await run_turn(oracle, "Lisbon and Porto?")

            first, second, third = oracle_model.requests
            assert [c.step for c in oracle_model.requests] == [1, 2, 3]
            assert {c.run_id for c in oracle_model.requests} == {result.run_id}
            assert first.system_prompt == "You forecast."
            assert first.user_message == "Lisbon and Porto?"
            assert first.tool_names == ["list_capabilities", "load_capability", "search_capabilities"]
            assert second.tool("get_forecast")["description"] == "Get the daily forecast for a place."
            assert [json.loads(r)["place"] for r in third.tool_results] == ["Lisbon", "Porto"]
            assert oracle_model.request(3) == third
            assert oracle_model.pending == 0


        async def test_http_model_requests_go_over_http_through_litellm(
            oracle_factory, oracle_http_model
        ):
            oracle_http_model.reply_text("hi")

            await run_turn(oracle_factory(), "hello")

            assert oracle_http_model.last_request.headers["user-agent"].startswith("AsyncOpenAI/")
            assert oracle_http_model.last_request.body["model"] == "scripted-model"


        async def test_steps_are_counted_per_run(oracle_factory, oracle_model):
            oracle = oracle_factory(forecast_plugin)
            oracle_model.reply_text("one").reply_text("two")

            first = await run_turn(oracle, "first")
            await run_turn(oracle, "second")

            assert oracle_model.request(1).user_message == "second"
            assert oracle_model.request(1, run=first).user_message == "first"
        """
    )

    project.runpytest().assert_outcomes(passed=3)


def test_a_request_is_recorded_alike_in_process_and_over_http(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_paths_agree="""
        import json
        import re

        import forecast_plugin
        from oracle_core.testing import run_turn


        async def script_and_run(oracle_factory, model, stream):
            model.reply_tool_call("load_capability", {"names": ["forecast"]})
            model.reply_tool_call("get_forecast", {"place": "Faro"})
            model.reply_text("Sunny in Faro.")
            oracle = oracle_factory(forecast_plugin, model=model, instructions="Be brief.")
            thread = f"{type(model).__name__}-{stream}"
            if stream:
                [event async for event in oracle.stream(thread, "Faro?")]
            else:
                await run_turn(oracle, "Faro?", thread=thread)
            # Tool call ids are fresh on every call, whichever the path.
            return [
                (call.step, re.sub(r"call_[0-9a-f]{12}", "call_id", json.dumps(call.body)))
                for call in model.requests[-3:]
            ]


        async def test_the_same_bodies_and_steps(oracle_factory, oracle_model, oracle_http_model):
            for stream in (False, True):
                in_process = await script_and_run(oracle_factory, oracle_model, stream)
                over_http = await script_and_run(oracle_factory, oracle_http_model, stream)

                assert [step for step, _ in in_process] == [1, 2, 3]
                assert in_process == over_http
        """
    )

    project.runpytest().assert_outcomes(passed=1)


def test_a_reply_can_be_a_function_of_the_request(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_functions="""
        import forecast_plugin
        from oracle_core.testing import Reply, assert_tool_called, run_turn


        async def test_one_reply_from_a_function(oracle_factory, oracle_model):
            oracle = oracle_factory(forecast_plugin)
            oracle_model.reply_with(lambda call: f"You said {call.user_message!r} on step {call.step}.")

            result = await run_turn(oracle, "hello")

            assert result.answer == "You said 'hello' on step 1."


        async def test_a_policy_for_every_request(oracle_factory, oracle_model):
            def policy(call):
                if "get_forecast" not in call.tool_names:
                    return Reply.call("load_capability", {"names": ["forecast"]})
                if call.step == 2:
                    return Reply.call("get_forecast", {"place": call.user_message})
                return "Done."

            oracle_model.respond_with(policy)
            oracle = oracle_factory(forecast_plugin)

            result = await run_turn(oracle, "Faro")

            assert result.answer == "Done."
            assert_tool_called(result, "get_forecast", {"place": "Faro"})


        async def test_a_function_that_raises_fails_the_run_naming_the_error(oracle_factory, oracle_model):
            def broken(call):
                raise KeyError("weather")

            oracle_model.reply_with(broken)

            result = await run_turn(oracle_factory(), "hi", expect="failed")

            assert "broken raised KeyError: 'weather'" in result.error
        """
    )

    project.runpytest().assert_outcomes(passed=3)


def test_a_request_without_a_queued_reply_fails_the_turn_saying_so(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_exhausted="""
        import forecast_plugin
        from oracle_core.testing import run_turn


        async def test_forgot_the_final_answer(oracle_factory, oracle_model):
            oracle_model.reply_tool_call("list_capabilities")

            await run_turn(oracle_factory(forecast_plugin), "what can you do?")
        """
    )

    result = project.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * AssertionError: the run on thread 'test-thread' ended 'failed', not 'completed': "
            "model call to 'scripted-model' failed (HTTP 400): the scripted model has no "
            "reply queued for step 2 of run run_* (request #2): queue one with reply_text(), "
            "reply_tool_call() or reply_with(), or answer every request with respond_with()*"
        ]
    )


@pytest.mark.parametrize("fixture", ["oracle_model", "oracle_http_model"])
def test_provider_errors_and_streams_are_scripted_too(
    project: pytest.Pytester, fixture: str
) -> None:
    project.makepyfile(
        test_paths=f"""
        import pytest
        import forecast_plugin
        from oracle_core.testing import run_turn


        @pytest.fixture
        def model({fixture}):
            return {fixture}
        """
        + """

        async def test_a_provider_error_fails_the_run(oracle_factory, model):
            model.reply_error(503, "overloaded")

            result = await run_turn(oracle_factory(), "hi", expect="failed")

            assert "HTTP 503" in result.error and "overloaded" in result.error


        async def test_a_streamed_turn_yields_the_text_in_pieces(oracle_factory, model):
            model.reply_text("A long and sunny answer.")
            oracle = oracle_factory(forecast_plugin)

            pieces = [e.text async for e in oracle.stream("t", "hi") if e.type == "text_delta"]

            assert len(pieces) > 1 and "".join(pieces) == "A long and sunny answer."
            assert model.last_request.stream
        """
    )

    project.runpytest().assert_outcomes(passed=2)


@pytest.mark.slow  # a fresh interpreter
def test_a_plugin_test_with_the_in_process_model_never_imports_litellm(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_light="""
        import sys

        import forecast_plugin
        from oracle_core.testing import assert_tool_called, run_turn


        async def test_a_turn(oracle_factory, oracle_model):
            oracle_model.reply_tool_call("load_capability", {"names": ["forecast"]})
            oracle_model.reply_tool_call("get_forecast", {"place": "Faro"})
            oracle_model.reply_text("Sunny.")

            result = await run_turn(oracle_factory(forecast_plugin), "Faro?")

            assert_tool_called(result, "get_forecast", {"place": "Faro"})


        def test_zz_nothing_imported_litellm_or_an_http_client():
            heavy = {"litellm", "httpx", "openai", "http.server"} & set(sys.modules)
            assert not heavy, heavy
        """
    )

    # A fresh interpreter: this one has litellm imported already.
    project.runpytest_subprocess().assert_outcomes(passed=2)


@pytest.mark.slow  # a fresh interpreter
def test_the_in_process_model_imports_no_litellm_nor_http_and_starts_no_thread() -> None:
    code = (
        "import sys, threading\n"
        "from oracle_core.testing import ScriptedModel\n"
        "model = ScriptedModel().reply_text('hi')\n"
        "heavy = {'litellm', 'httpx', 'openai', 'http.server'} & set(sys.modules)\n"
        "print(sorted(heavy), threading.active_count())"
    )
    out = fresh_python(code)

    assert out.split() == ["[]", "1"]
