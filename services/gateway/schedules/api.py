"""HTTP routes of schedules: ``PUT``, ``GET`` (one, or the list), ``DELETE
/v1/schedules/{name}`` and ``POST .../pause``, ``.../resume`` (docs/definitions.md,
"Schedules").

A ``PUT`` is checked at the edge (``generations.check_body``: cron, time zone, definition,
input; 422 naming every field) and submitted as the workflow ``schedule:<name>:<n>``
(``generations.Writer``); pause and resume are the signals ``pause`` and ``resume`` of the
live generation (``control.send.send_signal``); ``DELETE`` cancels it (its runs go on).
Every one is scoped by the principal's tenant (``schedules``): another tenant's schedule
is 404 as an unknown name, and its live name is 409 on ``PUT``.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import orjson
from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from headwater.core.definitions import NAME_PATTERN
from headwater.core.kinds.schedule.cron import PAUSE_SIGNAL, RESUME_SIGNAL
from headwater.core.retry import MAX_SECONDS
from services.gateway.auth.scope import principal
from services.gateway.control.models import SignalRequest
from services.gateway.control.send import send_signal, signal_record
from services.gateway.edge.body import parse_body, read_limited
from services.gateway.edge.problems import (
    CONFLICT,
    INVALID_REQUEST,
    INVALID_SCHEDULE,
    INVALID_SCHEDULE_NAME,
    INVALID_SPEC,
    NO_WORKER,
    NOT_FOUND,
    QUEUE_FULL,
    RECORD_TOO_LARGE,
    REQUEST_TOO_LARGE,
    SPEC_TOO_LARGE,
)
from services.gateway.lifetime import Runtime, accepting, runtime
from services.gateway.openapi.bodies import json_answer, json_body
from services.gateway.openapi.problems import READS, SIGNAL, WRITES, problems
from services.gateway.openapi.scheduling import PRIORITY_SCHEMA, or_null
from services.gateway.schedules.generations import (
    MAX_CATCHUP,
    ScheduleRequest,
    Writer,
    build_spec,
    check_body,
    check_schedule_name,
    generations,
    live,
    unknown,
)
from services.gateway.schedules.views import read_list, read_one

router = APIRouter()
PAUSE, RESUME = PAUSE_SIGNAL, RESUME_SIGNAL
"""The signals that pause and resume a schedule workflow (no fields)."""

SCHEDULE_PUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["cron", "definition"],
    "additionalProperties": False,
    "properties": {
        "cron": {"type": "string", "minLength": 1, "maxLength": 200, "description":
                 "croniter syntax: minute hour day month weekday, and optionally seconds "
                 "as a sixth field (*/5 * * * * */2: every 2 s)"},
        "timezone": {"type": "string", "default": "UTC", "description": "IANA time zone"},
        "definition": {"type": "string", "description": "a registered definition, name "
                       "(its latest version now) or name@version"},
        "input": {"description": "each run's input; must match the definition's "
                                 "input_schema"},
        "overlap": {"enum": ["skip", "allow", "cancel_previous"], "default": "skip"},
        "catchup": {"enum": ["none", "latest", "all"], "default": "none"},
        "catchup_max": {"type": "integer", "minimum": 1, "maximum": MAX_CATCHUP,
                        "default": 10},
        "misfire_grace": {"type": "number", "minimum": 0, "maximum": MAX_SECONDS,
                          "default": 60, "description": "seconds"},
        "start_at": {"type": ["string", "null"], "format": "date-time",
                     "description": "RFC 3339 with an offset; default: when accepted"},
        "priority": or_null({**PRIORITY_SCHEMA, "description": "the priority of the runs "
                            "it starts, in place of the definition's: "
                            f"{PRIORITY_SCHEMA['description']}"}),
    },
}
"""``PUT /v1/schedules/{name}`` (``generations.ScheduleRequest``)."""

_LINKS: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
SCHEDULE_APPLIED_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["name", "generation", "workflow_id", "created"],
    "properties": {"name": {"type": "string"}, "generation": {"type": "integer"},
                   "workflow_id": {"type": "string"}, "created": {"type": "boolean"},
                   "links": _LINKS},
}
"""The answer of ``PUT /v1/schedules/{name}``."""
_TIME = {"type": ["string", "null"], "format": "date-time"}
SCHEDULE_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["name", "generation", "workflow_id", "cron", "paused"],
    "properties": {
        "name": {"type": "string"}, "generation": {"type": "integer"},
        "workflow_id": {"type": "string"}, "status": {"type": "string"},
        "cron": {"type": "string"}, "timezone": {"type": "string"},
        "definition": {"type": "object", "properties": {"name": {"type": "string"},
                                                         "version": {"type": "integer"}}},
        "paused": {"type": "boolean"}, "next_fire_at": _TIME, "last_fire_at": _TIME,
        "last_run_id": {"type": ["string", "null"], "description": "the id of the last "
                        "run started: <workflow_id>:fire.<k>:1"},
        "fired": {"type": "integer"}, "skipped": {"type": "integer"},
        "runs": {"type": "array", "description": "the recent runs, newest first",
                 "items": {"type": "object"}},
        "links": _LINKS,
    },
}
"""The answer of ``GET /v1/schedules/{name}`` (and each item of the list)."""
SCHEDULES_LIST_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["items", "next_cursor"],
    "properties": {"items": {"type": "array", "items": SCHEDULE_SCHEMA},
                   "next_cursor": {"type": ["string", "null"]}},
}
"""The answer of ``GET /v1/schedules``."""
ScheduleName = Annotated[str, Path(json_schema_extra={
    "pattern": NAME_PATTERN, "description": "a schedule's name: 1-100 letters, digits and "
                                            "_.- starting with a letter or digit"})]
_NOT_FOUND = {404: "no live schedule of that name"}


def _json(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json",
                    headers=headers)


def _writer(hw: Runtime) -> Writer:
    return Writer(hw.pool, hw.producer, hw.settings.topics, hw.settings.produce_timeout_s,
                  hw.settings.auth.headers)


@router.put("/v1/schedules/{name}", status_code=201,
            openapi_extra=json_body(SCHEDULE_PUT_SCHEMA),
            responses={201: json_answer("a new generation (the one before it cancelled)",
                                        SCHEDULE_APPLIED_SCHEMA),
                       200: json_answer("the same settings as the live generation: it, "
                                        "unchanged", SCHEDULE_APPLIED_SCHEMA),
                       **problems(*WRITES, REQUEST_TOO_LARGE, RECORD_TOO_LARGE,
                                  INVALID_REQUEST, INVALID_SCHEDULE_NAME, INVALID_SCHEDULE,
                                  INVALID_SPEC, SPEC_TOO_LARGE, CONFLICT, NO_WORKER,
                                  QUEUE_FULL, meanings={
                           409: "another tenant's schedule holds the name",
                           422: "an invalid name or body: cron, timezone, definition "
                                "(malformed, unknown or deleted), input (against the "
                                "definition's input_schema), naming every field"})})
async def put_schedule(request: Request, name: ScheduleName) -> Response:
    """Create or replace a schedule: 201 (a new generation), 200 (the same settings),
    409 (another tenant's name), 413, 422 (every fault named), 503."""
    hw = accepting(request)
    check_schedule_name(name)
    body = parse_body(ScheduleRequest, await read_limited(request, hw.settings.max_body_bytes))
    me = principal(request)
    resolved, workflow = await check_body(hw.pool, body, me)
    applied = await _writer(hw).put(name, build_spec(name, body, resolved, workflow), me)
    where = f"/v1/schedules/{quote(name, safe='')}"
    return _json({"name": name, "generation": applied.generation,
                  "workflow_id": applied.workflow_id, "created": applied.created,
                  "links": {"self": where,
                            "workflow": f"/v1/workflows/{applied.workflow_id}"}},
                 201 if applied.created else 200, {"Location": where})


@router.get("/v1/schedules", responses={
    200: json_answer("the live schedules, by name", SCHEDULES_LIST_SCHEMA),
    **problems(*READS, INVALID_REQUEST)})
async def get_schedules(request: Request,
                        limit: Annotated[int, Query(ge=1, le=500)] = 100,
                        cursor: str | None = None) -> Response:
    """The live schedules by name, paged by ``cursor`` (the previous page's
    ``next_cursor``)."""
    return _json(await read_list(runtime(request).pool, limit, cursor, principal(request)))


@router.get("/v1/schedules/{name}", responses={
    200: json_answer("the schedule: settings, state and recent runs", SCHEDULE_SCHEMA),
    **problems(*READS, NOT_FOUND, meanings=_NOT_FOUND)})
async def get_schedule(request: Request, name: ScheduleName) -> Response:
    """A schedule's settings, state (paused, next and last fire, counts) and recent runs;
    404 when there is none (never put, or deleted)."""
    return _json(await read_one(runtime(request).pool, name, principal(request)))


async def _signal(request: Request, name: str, signal: str) -> Response:
    hw = accepting(request)
    current = live(await generations(hw.pool, name), principal(request))
    if current is None:
        raise unknown(name)
    await send_signal(hw.pool, hw.outlet,
                      signal_record(current.workflow_id, signal, SignalRequest(fields={})))
    return _json({"name": name, "generation": current.number,
                  "workflow_id": current.workflow_id, "signal": signal}, 202)


_SIGNALLED = json_answer("the signal is on its way to the schedule workflow",
                         {"type": "object"})
_SIGNAL_PROBLEMS = problems(*WRITES, *SIGNAL, meanings={
    **_NOT_FOUND, 400: "the schedule workflow takes no such signal",
    409: "the schedule ended meanwhile"})


@router.post("/v1/schedules/{name}/pause", status_code=202,
             responses={202: _SIGNALLED, **_SIGNAL_PROBLEMS})
async def pause_schedule(request: Request, name: ScheduleName) -> Response:
    """Pause a schedule: its fire times until ``resume`` start no run (202)."""
    return await _signal(request, name, PAUSE)


@router.post("/v1/schedules/{name}/resume", status_code=202,
             responses={202: _SIGNALLED, **_SIGNAL_PROBLEMS})
async def resume_schedule(request: Request, name: ScheduleName) -> Response:
    """Resume a paused schedule from its next fire time after now (202); the fire times
    while paused are not caught up."""
    return await _signal(request, name, RESUME)


@router.delete("/v1/schedules/{name}", status_code=204, responses={
    204: {"description": "cancelled: no new runs; runs already started go on"},
    **problems(*WRITES, NOT_FOUND, meanings=_NOT_FOUND)})
async def delete_schedule(request: Request, name: ScheduleName) -> Response:
    """Delete a schedule: its workflow is cancelled, its runs go on (204); 404 when
    there is none."""
    hw = accepting(request)
    await _writer(hw).delete(name, principal(request))
    return Response(status_code=204)
