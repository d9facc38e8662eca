"""``GET /v1/limits``: every limiter a keyed limit created, with what it holds and
queues after its latest event (the projection's ``limiters`` rows,
``services/projector/limiters.py``).

A limiter is shared by the runs of every tenant that name its key, so its key (a
customer's name, say) is not a tenant's to read: the list is for a principal of every
tenant (auth off, or an operator's token); a tenant's token gets an empty list.
"""

from __future__ import annotations

from typing import Annotated, Any

import asyncpg
import orjson
from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from services.gateway.auth.scope import principal
from services.gateway.lifetime import runtime
from services.gateway.openapi.bodies import json_answer
from services.gateway.openapi.problems import READS, problems

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
