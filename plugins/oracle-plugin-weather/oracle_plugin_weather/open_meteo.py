"""A small async client for Open-Meteo's keyless geocoding and forecast APIs."""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import urlsplit

import httpx

from oracle_plugin_weather.config import WeatherConfig
from oracle_plugin_weather.errors import WeatherError

Units = Literal["metric", "imperial"]
"""``metric``: °C, km/h, mm. ``imperial``: °F, mph, inch."""

CURRENT_VARIABLES = (
    "temperature_2m",
    "apparent_temperature",
    "relative_humidity_2m",
    "precipitation",
    "weather_code",
    "wind_speed_10m",
    "wind_direction_10m",
)
DAILY_VARIABLES = (
    "weather_code",
    "temperature_2m_max",
    "temperature_2m_min",
    "precipitation_sum",
    "precipitation_probability_max",
    "wind_speed_10m_max",
)
MAX_FORECAST_DAYS = 16
"""Open-Meteo forecasts at most 16 days ahead."""

_UNIT_PARAMETERS: dict[Units, dict[str, str]] = {
    "metric": {},
    "imperial": {
        "temperature_unit": "fahrenheit",
        "wind_speed_unit": "mph",
        "precipitation_unit": "inch",
    },
}
# Common ways of writing a country that differ from its ISO code or geocoded name.
_COUNTRY_ALIASES = {"usa": "us", "u.s.": "us", "u.s.a.": "us", "america": "us", "uk": "gb"}
_CANDIDATES_WITH_QUALIFIER = 20


@dataclass(frozen=True)
class Place:
    """A place the geocoding service resolved a name to."""

    name: str
    country: str | None
    country_code: str | None
    region: str | None
    latitude: float
    longitude: float
    timezone: str | None

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> Place:
        """Build a place from one entry of the geocoding answer's ``results``."""
        return cls(
            name=str(result.get("name", "")),
            country=result.get("country"),
            country_code=result.get("country_code"),
            region=result.get("admin1"),
            latitude=float(result["latitude"]),
            longitude=float(result["longitude"]),
            timezone=result.get("timezone"),
        )

    @property
    def label(self) -> str:
        """``Name, Region, Country`` without empty or repeated parts."""
        parts: list[str] = []
        for part in (self.name, self.region, self.country):
            if part and part not in parts:
                parts.append(part)
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        """The place as the tools report it."""
        return {
            "name": self.name,
            "region": self.region,
            "country": self.country,
            "latitude": self.latitude,
            "longitude": self.longitude,
            "timezone": self.timezone,
        }


class OpenMeteo:
    """Open-Meteo's geocoding and forecast APIs over one HTTP connection pool.

    Use it as ``async with OpenMeteo(config) as api: ...``. Every failure is raised as a
    :class:`~oracle_plugin_weather.WeatherError` whose message the model can act on.
    """

    def __init__(self, config: WeatherConfig) -> None:
        self.config = config
        self._client = httpx.AsyncClient(
            timeout=config.timeout, headers={"User-Agent": "oracle-plugin-weather"}
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._client.aclose()

    async def find_place(self, query: str) -> Place:
        """Resolve a place name, optionally followed by ``, region`` or ``, country``.

        Open-Meteo searches names only, so qualifiers after a comma are matched here
        against each candidate's country, country code and regions.
        """
        name, *qualifiers = [part.strip() for part in query.split(",") if part.strip()] or [""]
        if not name:
            raise WeatherError("The place is empty: name a city, town or postal code")
        answer = await self._get(
            "geocoding",
            self.config.geocoding_url,
            {
                "name": name,
                "count": _CANDIDATES_WITH_QUALIFIER if qualifiers else 1,
                "language": "en",
                "format": "json",
            },
        )
        results = [r for r in answer.get("results") or [] if isinstance(r, dict)]
        if not results:
            raise WeatherError(
                f"No place called {query.strip()!r} was found; check the spelling or add the country"
            )
        try:
            places = [Place.from_result(r) for r in results]
        except (KeyError, TypeError, ValueError):
            raise WeatherError(
                "The geocoding service answered without coordinates; try again later"
            ) from None
        if not qualifiers:
            return places[0]
        for place in places:
            if all(_matches(place, q) for q in qualifiers):
                return place
        found = "; ".join(p.label for p in places[:5])
        raise WeatherError(
            f"No place called {name!r} was found in {', '.join(qualifiers)!r} "
            f"(places called {name!r}: {found}); write the region or country as listed there"
        )

    async def current(self, place: Place, units: Units) -> dict[str, Any]:
        """The forecast service's answer with the current conditions at ``place``."""
        return await self._forecast(place, units, current=",".join(CURRENT_VARIABLES))

    async def daily(self, place: Place, units: Units, days: int) -> dict[str, Any]:
        """The forecast service's answer with ``days`` days of daily values at ``place``."""
        return await self._forecast(
            place, units, daily=",".join(DAILY_VARIABLES), forecast_days=days
        )

    async def _forecast(self, place: Place, units: Units, **params: Any) -> dict[str, Any]:
        return await self._get(
            "forecast",
            self.config.forecast_url,
            {
                "latitude": place.latitude,
                "longitude": place.longitude,
                "timezone": "auto",
                **_UNIT_PARAMETERS[units],
                **params,
            },
        )

    async def _get(self, service: str, url: str, params: dict[str, Any]) -> dict[str, Any]:
        host = urlsplit(url).netloc
        try:
            response = await self._client.get(url, params=params)
        except httpx.TimeoutException as error:
            raise WeatherError(
                f"The weather {service} service ({host}) did not answer within "
                f"{self.config.timeout:g} seconds; try again in a moment"
            ) from error
        except httpx.HTTPError as error:
            reason = str(error) or type(error).__name__
            raise WeatherError(
                f"The weather {service} service ({host}) could not be reached ({reason}); "
                "try again later"
            ) from error
        if response.status_code != 200:
            raise WeatherError(
                f"The weather {service} service ({host}) answered HTTP {response.status_code}"
                f"{_reason(response)} instead of data; try again later"
            )
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise WeatherError(
                f"The weather {service} service ({host}) answered with something other than "
                "a JSON object; try again later"
            )
        return data


def _matches(place: Place, qualifier: str) -> bool:
    wanted = qualifier.casefold()
    wanted = _COUNTRY_ALIASES.get(wanted, wanted)
    known = (place.country, place.country_code, place.region)
    return any(value and value.casefold() == wanted for value in known)


def _reason(response: httpx.Response) -> str:
    """Open-Meteo explains a rejected request as ``{"error": true, "reason": ...}``."""
    try:
        data = response.json()
    except ValueError:
        return ""
    reason = data.get("reason") if isinstance(data, dict) else None
    return f" ({reason})" if isinstance(reason, str) and reason else ""
