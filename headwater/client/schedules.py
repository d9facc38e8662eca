"""``Client.schedules`` and ``AsyncClient.schedules``: schedules (``/v1/schedules``, the
docs/definitions.md, "Schedules"). Each method's request and the reading of its answer are one
``requests.Request`` built here, sent by the client's ``fetch`` (so they retry as
its other calls do: a ``PUT`` again is the same generation when it was applied).
"""

from __future__ import annotations

import builtins
from typing import Any, TypedDict, Unpack

from headwater.client.http import Call, segment
from headwater.client.requests import (
    Fetches,
    FetchesAsync,
    Listing,
    Request,
    nothing,
    pages,
    reading,
)
from headwater.client.types import (
    Schedule,
    ScheduleApplied,
    schedule_applied_from,
    schedule_from,
)


class ScheduleOptions(TypedDict, total=False):
    """A schedule's options beside its cron, definition and input; those not given take
    the gateway's defaults."""

    timezone: str
    """An IANA time zone (default ``UTC``)."""
    overlap: str
    """``skip`` (default), ``allow`` or ``cancel_previous``."""
    catchup: str
    """``none`` (default), ``latest`` or ``all``."""
    catchup_max: int
    """With ``all``: at most this many missed fire times (default 10)."""
    misfire_grace: float
    """Seconds after which a fire time is missed (default 60)."""
    start_at: str
    """RFC 3339 with an offset: fire times after it (default: from acceptance)."""


def put_body(cron: str, definition: str, input: Any, options: ScheduleOptions,
             ) -> dict[str, Any]:
    """The body of a ``PUT``."""
    return {"cron": cron, "definition": definition, "input": input, **options}


def put_call(name: str, body: dict[str, Any]) -> Call:
    """``PUT /v1/schedules/{name}`` with ``body``."""
    return Call("PUT", f"/v1/schedules/{segment(name)}", json=body)


def _one(name: str, verb: str = "") -> str:
    return f"/v1/schedules/{segment(name)}" + (f"/{verb}" if verb else "")


def applying(name: str, body: dict[str, Any]) -> Request[ScheduleApplied]:
    """``Schedules.apply``: ``PUT /v1/schedules/{name}``."""
    return Request(put_call(name, body), reading(schedule_applied_from))


def listing() -> Request[Listing[Schedule]]:
    """``Schedules.list``: every page of ``GET /v1/schedules``."""
    return pages("/v1/schedules", schedule_from)


def showing(name: str) -> Request[Schedule]:
    """``Schedules.get``: ``GET /v1/schedules/{name}``."""
    return Request(Call("GET", _one(name)), reading(schedule_from))


def acting(method: str, name: str, verb: str = "") -> Request[None]:
    """``method`` on the schedule's path (``POST .../pause``, ``DELETE``), answered
    without a body to read."""
    return Request(Call(method, _one(name, verb)), nothing)


class Schedules:
    """``Client.schedules``: create or replace, list, show, pause, resume, delete."""

    def __init__(self, client: Fetches) -> None:
        self._client = client

    def put(self, name: str, *, cron: str, definition: str, input: Any = None,
            **options: Unpack[ScheduleOptions]) -> ScheduleApplied:
        """Create or replace the schedule ``name``: runs of ``definition`` (``name`` or
        ``name@3``) with ``input`` at each fire time of ``cron`` in ``timezone``.

        ``options`` (``ScheduleOptions``: timezone, overlap, catchup, catchup_max,
        misfire_grace, start_at) not given take the gateway's defaults. The same
        settings as the live generation answer it (``created`` False); others make the
        next generation. Raises ``Unprocessable`` naming each faulty field (cron,
        timezone, definition, input ...).
        """
        return self.apply(name, put_body(cron, definition, input, options))

    def apply(self, name: str, body: dict[str, Any]) -> ScheduleApplied:
        """``put`` with the body as a mapping (a file's, as ``headwater schedules apply``
        reads it); the gateway names any field it does not take."""
        return self._client.fetch(applying(name, body))

    def list(self) -> builtins.list[Schedule]:
        """Every live schedule, by name (every page of ``GET /v1/schedules``)."""
        return self._client.fetch_all(listing())

    def get(self, name: str) -> Schedule:
        """A schedule; ``raw["runs"]`` are its recent runs. Raises ``NotFound``."""
        return self._client.fetch(showing(name))

    def pause(self, name: str) -> None:
        """Pause it: fire times start no run until ``resume``. Raises ``NotFound``."""
        self._client.fetch(acting("POST", name, "pause"))

    def resume(self, name: str) -> None:
        """Resume it from its next fire time after now (paused ones are not caught up)."""
        self._client.fetch(acting("POST", name, "resume"))

    def delete(self, name: str) -> None:
        """Delete it: no new runs (runs started go on). Raises ``NotFound``."""
        self._client.fetch(acting("DELETE", name))


class AsyncSchedules:
    """``AsyncClient.schedules``: as ``Schedules``, to await."""

    def __init__(self, client: FetchesAsync) -> None:
        self._client = client

    async def put(self, name: str, *, cron: str, definition: str, input: Any = None,
                  **options: Unpack[ScheduleOptions]) -> ScheduleApplied:
        """As ``Schedules.put``."""
        return await self.apply(name, put_body(cron, definition, input, options))

    async def apply(self, name: str, body: dict[str, Any]) -> ScheduleApplied:
        """As ``Schedules.apply``."""
        return await self._client.fetch(applying(name, body))

    async def list(self) -> builtins.list[Schedule]:
        """As ``Schedules.list``."""
        return await self._client.fetch_all(listing())

    async def get(self, name: str) -> Schedule:
        """As ``Schedules.get``."""
        return await self._client.fetch(showing(name))

    async def pause(self, name: str) -> None:
        """As ``Schedules.pause``."""
        await self._client.fetch(acting("POST", name, "pause"))

    async def resume(self, name: str) -> None:
        """As ``Schedules.resume``."""
        await self._client.fetch(acting("POST", name, "resume"))

    async def delete(self, name: str) -> None:
        """As ``Schedules.delete``."""
        await self._client.fetch(acting("DELETE", name))
