"""A tool's description and argument docs come from its Google-style docstring."""

from __future__ import annotations

from oracle_core import tool


def test_the_description_is_the_text_before_the_first_section() -> None:
    @tool
    def forecast(place: str) -> str:
        """Get the forecast.

        One entry a day.

        Note:
            Not part of the description.
        """
        return place

    assert forecast.description == "Get the forecast.\n\nOne entry a day."


def test_argument_docs_become_schema_descriptions_on_one_line() -> None:
    @tool
    def forecast(place: str, days: int = 3) -> str:
        """Get the forecast.

        Args:
            place (str): a city, town or postal code; add the country
                when the name is ambiguous.
            days: how many days.

        Attributes:
            cache: not an argument.
        """
        return place

    properties = forecast.parameters["properties"]
    assert properties["place"]["description"] == (
        "a city, town or postal code; add the country when the name is ambiguous."
    )
    assert properties["days"]["description"] == "how many days."


def test_a_section_that_cannot_be_parsed_gives_no_argument_docs_but_a_working_tool() -> None:
    @tool
    def forecast(place: str) -> str:
        """Get the forecast.

        Args:
            place (str: a broken line
        """
        return place

    assert forecast.description == "Get the forecast."
    assert "description" not in forecast.parameters["properties"]["place"]
