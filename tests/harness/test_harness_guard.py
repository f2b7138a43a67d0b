"""Real model requests are refused in tests that use the harness, unless a test opts in."""

from __future__ import annotations

import pytest
from support import fresh_python

# The inner runs share this process, so this project's own guard (on for all its tests) would
# refuse their requests before the inner guard could decide: the inner guard alone is under
# test here.
pytestmark = pytest.mark.oracle_allow_model_requests

REAL_MODEL_TEST = """
import litellm
import pytest
from oracle_core.models.litellm import LiteLLMModel
from oracle_core.testing import run_turn


async def test_asks_a_real_model(oracle_factory, monkeypatch):
    async def provider(**arguments):
        raise RuntimeError("litellm was asked for " + arguments["model"])

    monkeypatch.setattr(litellm, "acompletion", provider)
    oracle = oracle_factory(model=LiteLLMModel("openai/gpt-4o-mini", num_retries=0))

    result = await run_turn(oracle, "hi", expect="failed")

    print("RUN ERROR:", result.error)
"""


def test_a_real_model_request_is_refused_and_fails_the_test(project: pytest.Pytester) -> None:
    project.makepyfile(test_real=REAL_MODEL_TEST)

    result = project.runpytest("-s")

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*RUN ERROR: a real model request to 'openai/gpt-4o-mini' at the provider's default "
            "endpoint was refused: tests may only reach models on 127.0.0.1. Use the oracle_model "
            "fixture (a scripted model), or mark the test with "
            "@pytest.mark.oracle_allow_model_requests, *",
            "*ERROR at teardown of test_asks_a_real_model*",
            "test_asks_a_real_model tried to call a real model: a real model request "
            "to 'openai/gpt-4o-mini' *",
        ]
    )


@pytest.mark.parametrize(
    "opt_in",
    [
        "marker",
        "module marker",
        "ini option",
        "environment",
    ],
)
def test_a_test_can_opt_in_to_real_model_requests(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, opt_in: str
) -> None:
    source = REAL_MODEL_TEST
    if opt_in == "marker":
        source = source.replace(
            "async def test_", "@pytest.mark.oracle_allow_model_requests\nasync def test_"
        )
    elif opt_in == "module marker":
        source += "\npytestmark = pytest.mark.oracle_allow_model_requests\n"
    elif opt_in == "ini option":
        project.makeini(
            "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
            "oracle_allow_model_requests = true\n"
        )
    else:
        monkeypatch.setenv("ORACLE_ALLOW_MODEL_REQUESTS", "1")
    project.makepyfile(test_real=source)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # else the model refuses before asking

    result = project.runpytest("-s", "--strict-markers")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*RUN ERROR: *litellm was asked for openai/gpt-4o-mini*"])


NO_HARNESS_TEST = """
import litellm
from oracle_core.models.litellm import LiteLLMModel
from oracle_core.values.messages import ModelRequest


async def test_calls_litellm_without_the_harness(monkeypatch):
    async def provider(**arguments):
        raise RuntimeError("litellm was asked for " + arguments["model"])

    monkeypatch.setattr(litellm, "acompletion", provider)
    request = ModelRequest("t", "r", 1, "openai/gpt-4o-mini", "", [], [])

    try:
        await LiteLLMModel("openai/gpt-4o-mini", num_retries=0).complete(request)
    except Exception as error:
        print("MODEL ERROR:", error)
"""


def test_a_test_that_uses_no_harness_fixture_is_not_guarded(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_plain=NO_HARNESS_TEST)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # else the model refuses before asking

    result = project.runpytest("-s")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*MODEL ERROR: *litellm was asked for openai/gpt-4o-mini*"])


def test_a_project_can_guard_every_test(project: pytest.Pytester) -> None:
    project.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "usefixtures = oracle_refuse_model_requests\n"
    )
    project.makepyfile(test_plain=NO_HARNESS_TEST)

    result = project.runpytest("-s")

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*MODEL ERROR: a real model request to 'openai/gpt-4o-mini' at the provider's "
            "default endpoint was refused*",
            "test_calls_litellm_without_the_harness tried to call a real model: *",
        ]
    )


def test_models_on_this_machine_are_allowed(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_local="""
        from oracle_core.models.litellm import LiteLLMModel
        from oracle_core.testing import FakeOpenAI, Reply, run_turn


        async def test_a_local_server(oracle_factory):
            with FakeOpenAI() as server:
                server.script(Reply.text("local"))
                model = LiteLLMModel("openai/local", api_base=server.url.replace("127.0.0.1", "localhost"), api_key="k")

                result = await run_turn(oracle_factory(model=model), "hi")

            assert result.answer == "local"
        """
    )

    project.runpytest().assert_outcomes(passed=1)


@pytest.mark.slow  # a fresh interpreter
def test_the_pytest_plugin_does_not_import_litellm() -> None:
    code = (
        "import sys, oracle_core.testing.pytest_plugin\n"
        "print('litellm' in sys.modules, 'oracle_core.testing.scripted' in sys.modules)"
    )
    out = fresh_python(code)

    assert out.split() == ["False", "False"]
