"""``oracle_factory`` and the helpers, as a plugin author's test suite uses them."""

from __future__ import annotations

import pytest


def test_a_plugin_is_tested_end_to_end_in_a_few_lines(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_forecast="""
        import forecast_plugin
        from oracle_core.testing import assert_shown, assert_tool_called, run_turn


        async def test_the_model_loads_forecast_then_calls_it(oracle_factory, oracle_model):
            oracle = oracle_factory(forecast_plugin)
            oracle_model.reply_tool_call("load_capability", {"names": ["forecast"]})
            oracle_model.reply_tool_call("get_forecast", {"place": "Lisbon", "days": 2})
            oracle_model.reply_text("Sunny for two days.")

            result = await run_turn(oracle, "Forecast for Lisbon?")

            assert result.answer == "Sunny for two days."
            output = assert_tool_called(result, "get_forecast", {"place": "Lisbon", "days": 2})
            assert '"summary": "sunny"' in output.content
            assert_shown(oracle_model.request(1), hidden=["get_forecast"])
            assert_shown(oracle_model.request(2), tools=["get_forecast", "forecast_units"])
        """
    )

    project.runpytest().assert_outcomes(passed=1)


def test_only_the_plugins_a_test_names_are_registered(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_isolated="""
        import forecast_plugin


        def test_installed_plugins_stay_out(oracle_factory):
            oracle = oracle_factory(forecast_plugin)

            assert list(oracle.registry.plugins) == ["forecast"]


        def test_installed_plugins_come_in_by_name(oracle_factory):
            oracle = oracle_factory(forecast_plugin, entry_points=["calculator"])

            assert list(oracle.registry.plugins) == ["forecast", "calculator"]


        def test_a_plugin_may_be_named_by_its_module(oracle_factory):
            oracle = oracle_factory("forecast_plugin")

            assert list(oracle.registry.plugins) == ["forecast"]
        """
    )

    project.runpytest().assert_outcomes(passed=3)


def test_the_store_and_settings_live_in_the_tests_temporary_folder(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORACLE_PLUGIN_FORECAST__UNITS", "from the developer's shell")
    project.makepyfile(
        test_home="""
        import forecast_plugin
        from oracle_core.testing import call_tool, run_turn


        async def test_home_is_private(oracle_factory, oracle_model, tmp_path):
            oracle = oracle_factory(forecast_plugin)
            oracle_model.reply_text("Hello.")

            await run_turn(oracle, "hi")

            assert oracle.settings.home == oracle_factory.home
            assert oracle_factory.home.is_relative_to(tmp_path)
            assert (oracle_factory.home / "oracle.db").exists()


        async def test_config_reaches_the_tools_and_the_shell_does_not(oracle_factory):
            metric = oracle_factory(forecast_plugin)
            imperial = oracle_factory(forecast_plugin, config={"forecast": {"units": "imperial"}})

            assert await call_tool(metric, "forecast_units") == "metric"
            assert await call_tool(imperial, "forecast_units") == "imperial"


        async def test_env_reaches_plugin_settings(oracle_factory):
            oracle = oracle_factory(forecast_plugin, env={"ORACLE_PLUGIN_FORECAST__UNITS": "kelvin"})

            assert await call_tool(oracle, "forecast_units") == "kelvin"
        """
    )

    project.runpytest().assert_outcomes(passed=3)


def test_every_oracle_is_closed_when_its_test_ends(project: pytest.Pytester) -> None:
    log = project.path / "lifecycle.log"
    project.makepyfile(
        lifecycle_plugin=f"""
        from oracle_core import PluginManifest, hookimpl


        @hookimpl
        def oracle_manifest():
            return PluginManifest(name="lifecycle", summary="Logs its lifecycle.", visibility="silent")


        @hookimpl
        def oracle_startup():
            open({str(log)!r}, "a").write("startup\\n")


        @hookimpl
        def oracle_shutdown():
            open({str(log)!r}, "a").write("shutdown\\n")
        """,
        test_lifecycle="""
        import lifecycle_plugin
        from oracle_core.testing import run_turn


        async def test_a_turn_starts_the_oracle(oracle_factory, oracle_model):
            oracle_model.reply_text("ok")

            await run_turn(oracle_factory(lifecycle_plugin), "hi")
        """,
    )

    project.runpytest().assert_outcomes(passed=1)

    assert log.read_text().split() == ["startup", "shutdown"]


def test_a_plugin_that_fails_to_assemble_fails_the_test_naming_it(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        bad_plugin="""
        from oracle_core import PluginManifest, hookimpl


        @hookimpl
        def oracle_manifest():
            return {"name": "bad", "summary": "Has no guidance."}
        """,
        test_bad="""
        import bad_plugin


        def test_strict_by_default(oracle_factory):
            oracle_factory(bad_plugin)


        def test_failures_can_be_inspected(oracle_factory):
            oracle = oracle_factory(bad_plugin, strict=False)

            [failure] = oracle.registry.failures
            assert failure.field == "when_to_use"
        """,
    )

    result = project.runpytest()

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * 1 plugin(s) failed to assemble:",
            "E *   - bad_plugin: manifest field 'when_to_use' is empty *",
            "E * (pass strict=False to build the oracle anyway *",
        ]
    )


def test_call_tool_validates_and_runs_a_tool_as_the_model_would(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_call="""
        import pytest
        import forecast_plugin
        from oracle_core import ToolArgumentsError
        from oracle_core.testing import call_tool


        async def test_arguments_as_a_dict_or_as_json_text(oracle_factory):
            oracle = oracle_factory(forecast_plugin)

            assert await call_tool(oracle, "get_forecast", {"place": "Porto"}) == {
                "place": "Porto", "days": 3, "summary": "sunny"
            }
            assert (await call_tool(oracle, "get_forecast", '{"place": "Faro", "days": "2"}'))["days"] == 2


        async def test_bad_arguments_raise_naming_the_field(oracle_factory):
            oracle = oracle_factory(forecast_plugin)

            calls = len(forecast_plugin.CALLS)

            with pytest.raises(ToolArgumentsError, match="days: Input should be a valid integer"):
                await call_tool(oracle, "get_forecast", {"place": "Faro", "days": "soon"})
            assert len(forecast_plugin.CALLS) == calls


        async def test_an_unknown_tool_lists_the_real_ones(oracle_factory):
            oracle = oracle_factory(forecast_plugin)

            with pytest.raises(LookupError, match="its plugin tools: get_forecast, forecast_units"):
                await call_tool(oracle, "get_weather", {})


        async def test_a_load_is_saved_to_the_thread(oracle_factory, oracle_model):
            oracle = oracle_factory(forecast_plugin)
            oracle_model.reply_text("ok")

            [loaded] = await call_tool(oracle, "load_capability", {"names": ["forecast"]}, thread="t")
            await oracle.run("t", "hi")

            assert loaded["name"] == "forecast"
            assert "get_forecast" in oracle_model.request(1).tool_names
        """
    )

    project.runpytest().assert_outcomes(passed=4)


def test_assertion_failures_say_what_happened_instead(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_messages="""
        import forecast_plugin
        from oracle_core.testing import assert_shown, assert_tool_called, run_turn


        async def test_wrong_arguments(oracle_factory, oracle_model):
            oracle = oracle_factory(forecast_plugin)
            oracle_model.reply_tool_call("load_capability", {"names": ["forecast"]})
            oracle_model.reply_tool_call("get_forecast", {"place": "Paris"})
            oracle_model.reply_text("ok")
            result = await run_turn(oracle, "Forecast for Lisbon?")

            assert_tool_called(result, "get_forecast", {"place": "Lisbon"})


        async def test_refused_call(oracle_factory, oracle_model):
            oracle = oracle_factory(forecast_plugin)
            oracle_model.reply_tool_call("get_forecast", {"place": "Lisbon"})
            oracle_model.reply_text("ok")
            result = await run_turn(oracle, "Forecast for Lisbon?")

            assert_tool_called(result, "get_forecast")


        async def test_hidden_tool_expected(oracle_factory, oracle_model):
            oracle = oracle_factory(forecast_plugin)
            oracle_model.reply_text("ok")
            await run_turn(oracle, "hi")

            assert_shown(oracle_model.request(1), tools=["get_forecast"])


        async def test_a_step_that_did_not_happen(oracle_factory, oracle_model):
            oracle = oracle_factory(forecast_plugin)
            oracle_model.reply_text("ok")
            await run_turn(oracle, "hi")

            oracle_model.request(2)
        """
    )

    result = project.runpytest()

    result.assert_outcomes(failed=4)
    output = result.stdout.str()
    assert (
        'AssertionError: the model did not call get_forecast({"place": "Lisbon"}); the model '
        'called: load_capability({"names": ["forecast"]}), get_forecast({"place": "Paris"})'
    ) in output
    assert (
        "AssertionError: the model called get_forecast, but the capability gate refused the "
        "call (its plugin was not loaded when the model was asked): Tool 'get_forecast' is not "
        'available yet: call load_capability({"names": ["forecast"]}) first, then call the tool '
        "again."
    ) in output
    assert ("did not show get_forecast. Tools shown: list_capabilities, load_capability") in output
    assert "made 1 model call(s) (step 1); there is no step 2" in output
    assert "oracle_core/testing" not in output  # the helpers hide their own frames
