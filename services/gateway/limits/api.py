"""``GET /v1/limits``: every limiter a keyed limit created, with what it holds and
queues after its latest event (the projection's ``limiters`` rows,
``services/projector/limiters.py``).

A limiter is shared by the runs of every tenant that name its key, so its key (a
customer's name, say) is not a tenant's to read: the list is for a principal of every
tenant (auth off, or an operator's token); a tenant's token gets an empty list.
``PUT /v1/limits/{key}`` defines a key's limits (``define.py``).
"""

from __future__ import annotations

from typing import Annotated, Any

import asyncpg
import orjson
from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from services.gateway.auth.scope import principal
from services.gateway.edge.body import read_limited
from services.gateway.edge.problems import FORBIDDEN, INVALID_REQUEST, REQUEST_TOO_LARGE
from services.gateway.lifetime import accepting, runtime
from services.gateway.limits.define import define, definitions
from services.gateway.openapi.bodies import json_answer, json_body
from services.gateway.openapi.problems import READS, WRITES, problems

router = APIRouter()

LIMIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "limiter": {"type": "string", "description": "the limiter's id (its history's)"},
        "kind": {"type": "string", "enum": ["concurrency", "rate"]},
        "key": {"type": "string", "description": "the key, as resolved"},
        "limit": {"type": "integer"},
        "window_s": {"type": ["number", "null"], "description": "a rate limit's window"},
        "holding": {"type": "integer", "description": "permits held (concurrency), or "
                                                      "units granted in the window (rate)"},
        "queued": {"type": "integer", "description": "requests waiting"},
        "granted": {"type": "integer", "description": "permits granted so far"},
        "updated_at": {"type": "string", "format": "date-time"},
    },
}
LIMITS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": LIMIT_SCHEMA},
                   "next_cursor": {"type": ["string", "null"]}},
}


@router.get("/v1/limits", responses={
    200: json_answer("every limiter, by id", LIMITS_SCHEMA),
    **problems(*READS)})
async def get_limits(request: Request,
                     limit: Annotated[int, Query(ge=1, le=500)] = 100,
                     cursor: str | None = None) -> Response:
    """Every limiter by id (a page of ``limit``, after ``cursor``: the previous page's
    ``next_cursor``): its kind, key and limit, and what it holds and queues."""
    if not principal(request).every_tenant:  # keys are every tenant's: none are its own
        body: dict[str, Any] = {"items": [], "next_cursor": None}
    else:
        body = await read_limits(runtime(request).pool, limit, cursor)
    return Response(orjson.dumps(body), media_type="application/json")


DEFINED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "key": {"type": "string"},
        "limits": {"type": "array", "items": {"type": "object", "properties": {
            "limiter": {"type": "string"},
            "kind": {"type": "string", "enum": ["concurrency", "rate"]},
            "limit": {"type": ["integer", "null"], "description": "null: taken back"},
            "window_s": {"type": ["number", "null"]},
            "links": {"type": "object"}}}},
    },
}


LIMIT_BODY_SCHEMA: dict[str, Any] = {
    "type": "object", "minProperties": 1, "additionalProperties": False,
    "properties": {
        "concurrency": {"type": ["object", "null"], "description": "{limit}; null: take "
                        "the definition back", "properties": {"limit": {"type": "integer"}}},
        "rate_limit": {"type": ["object", "null"], "description": "{per_second}, "
                       "{per_minute} or {limit, window_s}; null: take the definition back",
                       "properties": {"per_second": {"type": "integer"},
                                      "per_minute": {"type": "integer"},
                                      "limit": {"type": "integer"},
                                      "window_s": {"type": "number"}}},
    },
}


@router.put("/v1/limits/{key}", status_code=202, openapi_extra=json_body(LIMIT_BODY_SCHEMA),
            responses={
    202: json_answer("the definitions are on their way to the limiters", DEFINED_SCHEMA),
    **problems(*WRITES, REQUEST_TOO_LARGE, INVALID_REQUEST, FORBIDDEN, meanings={
        403: "a tenant's token: a key is every tenant's",
        422: "the key or the body, naming every fault"})})
async def put_limit(request: Request, key: str) -> Response:
    """Define ``key``'s limits apart from the specs that name it: ``concurrency:
    {limit}`` and/or ``rate_limit: {per_second | per_minute | limit + window_s}`` (null:
    take that definition back, the specs' limit applies again). Recorded in each
    limiter's history (``LimitDefined``), it governs its next grants."""
    hw = accepting(request)
    records = definitions(key, await read_limited(request, hw.settings.max_body_bytes),
                          principal(request))
    return Response(orjson.dumps(await define(hw.outlet, records)), status_code=202,
                    media_type="application/json")


async def read_limits(pool: asyncpg.Pool, limit: int, cursor: str | None) -> dict[str, Any]:
    """A page of the ``limiters`` rows, by id."""
    rows = await pool.fetch(
        "select workflow_id, kind, key, lim, window_ms, holding, queued, granted, updated_at"
        " from limiters where ($1::text is null or workflow_id > $1)"
        " order by workflow_id limit $2", cursor, limit + 1)
    items = [{"limiter": r["workflow_id"], "kind": r["kind"], "key": r["key"],
              "limit": r["lim"],
              "window_s": r["window_ms"] / 1000 if r["kind"] == "rate" else None,
              "holding": r["holding"], "queued": r["queued"], "granted": r["granted"],
              "updated_at": r["updated_at"].isoformat()} for r in rows[:limit]]
    return {"items": items,
            "next_cursor": rows[limit - 1]["workflow_id"] if len(rows) > limit else None}
