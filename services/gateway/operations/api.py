"""HTTP routes of bulk operations (the HTTP table of docs/http-api.md;
docs/architecture.md §4t): ``POST /v1/operations`` (a dry run answers the count and a
sample; else the operation is recorded and worked through in the background),
``GET /v1/operations/{id}`` (its progress and counts) and ``GET /v1/operations``.

The filter is the listing's (``GET /v1/workflows``), scoped to the caller's tenant as a
listing is. The targets are the runs it matches when the operation starts, oldest
first, at most ``MAX_TARGETS``; limiters and caches are never among them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from typing import Any

import asyncpg
import orjson
from fastapi import APIRouter, FastAPI, Query, Request
from starlette.responses import Response

from headwater.core.caching import CACHE_PREFIX
from headwater.core.limits import LIMITER_PREFIX
from headwater.operations import MAX_TARGETS, SAMPLE, Progress
from services.common.auth.tokens import Principal
from services.common.clock import now_ms
from services.gateway.auth.scope import list_tenant, principal
from services.gateway.edge.body import parse_body, read_limited, require_storable
from services.gateway.edge.problems import CONFLICT, INVALID_REQUEST, NOT_FOUND, Problem
from services.gateway.lifetime import accepting, runtime
from services.gateway.openapi.bodies import json_body
from services.gateway.openapi.problems import BODY, READS, WRITES, problems
from services.gateway.operations import store
from services.gateway.operations.actions import ACTIONS, ACTS_ON, NEEDS
from services.gateway.operations.models import OperationFilter, OperationRequest
from services.gateway.operations.runner import Runner
from services.gateway.runs.listing import (
    ListFilter,
    filter_clauses,
    label_selectors,
    list_filter,
)

router = APIRouter()
log = logging.getLogger("headwater.gateway")
BODY_BYTES = 256 * 1024
RESUME_SHARE = 1 / 3
"""How often a gateway looks for operations to take over, as a share of the lease
(``Settings.operations_lease_s``)."""
OPERATION_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["action", "filter"],
    "properties": {
        "action": {"type": "string", "enum": sorted(ACTIONS)},
        "filter": {"type": "object", "description": "the filters of GET /v1/workflows "
                   "(status, name, tenant, definition, label: [key:value, ...], "
                   "created_after, created_before, paused: true|false), at least one"},
        "dry_run": {"type": "boolean", "description": "answer the count and a sample; "
                    "record nothing"},
        "id": {"type": ["string", "null"], "description": "the operation's id, the "
               "idempotency key"},
        "reason": {"type": "string", "description": "a cancel's or a pause's reason"},
        "signal": {"type": "object", "description": "a signal's {name, fields, index}"},
        "cache": {"type": ["string", "null"], "enum": ["refresh", None]},
    },
}
"""``POST /v1/operations`` (``operations.models.OperationRequest``)."""


def _json(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json",
                    headers=headers)


def _invalid(error: str) -> Problem:
    return Problem(422, "Invalid request", error, errors=[error])


def _filter(given: OperationFilter, me: Principal) -> tuple[ListFilter, bool]:
    """The listing's filter of ``given`` for ``me``, and whether it can match nothing
    (another tenant's runs).

    Raises:
        Problem: 422 for an empty filter (an operation on every run is asked for by
            name: ``status``, say), or a malformed value (named).
    """
    if not given.given().keys() - {"tenant"}:
        raise _invalid("filter: give at least one of status, name, definition, label, "
                       "created_after, created_before, paused (an operation on every run "
                       "is not taken without one)")
    try:
        tenant, empty = list_tenant(me, given.tenant)
        filters = list_filter(given.status, given.name, tenant, given.definition,
                              given.created_after, given.created_before)
        labels = label_selectors(given.label)
    except Problem as e:  # the listing's faults name query parameters: here, the filter's
        errors = [str(f).replace("query.", "filter.", 1)
                  for f in e.extra.get("errors") or [e.detail]]
        e.detail, e.extra["errors"] = "; ".join(errors), errors
        raise
    return dataclasses.replace(filters, labels=labels, paused=given.paused), empty


async def match(pool: asyncpg.Pool, filters: ListFilter, limit: int) -> list[str]:
    """The ids of the accepted runs ``filters`` matches (no limiter, no cache), oldest
    first, at most ``limit``."""
    args: list[object] = []
    where = filter_clauses(filters, args)
    args += [LIMITER_PREFIX + "%", CACHE_PREFIX + "%", limit]
    where += ["seq > 0", f"workflow_id not like ${len(args) - 2}",
              f"workflow_id not like ${len(args) - 1}"]
    rows = await pool.fetch(f"select workflow_id from workflows where {' and '.join(where)}"
                            f" order by created_at, workflow_id limit ${len(args)}", *args)
    return [r["workflow_id"] for r in rows]


async def _by_status(pool: asyncpg.Pool, targets: list[str]) -> dict[str, int]:
    """How many of ``targets`` are in each status now."""
    rows = await pool.fetch("select status, count(*) as n from workflows where workflow_id"
                            " = any($1::text[]) group by status", targets)
    return {r["status"]: r["n"] for r in rows}


def view(row: Any) -> dict[str, Any]:
    """An operation's document (its row of ``operations``)."""
    doc = row["doc"]
    targets = doc["targets"]
    return {"id": row["operation_id"], "action": row["action"], "state": row["state"],
            "tenant": row["tenant"], "filter": doc["filter"], "args": doc["args"],
            "matched": len(targets), "progress": doc["next"], "counts": doc["counts"],
            "reasons": doc["reasons"], "sample": targets[:SAMPLE],
            "created_at": row["created_at"].isoformat(),
            "updated_at": row["updated_at"].isoformat(),
            "links": {"self": f"/v1/operations/{row['operation_id']}"}}


@router.post("/v1/operations", status_code=202, openapi_extra=json_body(OPERATION_SCHEMA),
             responses={200: {"description": "a dry run's count and sample, or the same "
                                              "id again: the same operation"},
                        **problems(*WRITES, *BODY, CONFLICT, meanings={
                            409: "the id is taken by another operation",
                            422: "an unknown action, a missing argument, an empty or "
                                 "malformed filter, or more runs than one operation takes"})})
async def post_operation(request: Request) -> Response:
    """Do an action to every run a filter matches (see the module): 200 for a dry run
    (``matched``, ``sample``) or the same id again, 202 once recorded, 409, 422, 503."""
    hw = accepting(request)
    body = parse_body(OperationRequest, await read_limited(request, BODY_BYTES))
    if body.action not in ACTIONS:
        raise _invalid(f"action: {body.action[:80]!r} is not one of {', '.join(ACTIONS)}")
    needed = NEEDS.get(body.action)
    if needed is not None and getattr(body, needed) is None:
        raise _invalid(f"{needed}: required by a bulk {body.action}")
    require_storable(body.args())
    me = principal(request)
    filters, empty = _filter(body.filter, me)
    targets = [] if empty else await match(hw.pool, filters, MAX_TARGETS + 1)
    if body.dry_run:
        statuses = await _by_status(hw.pool, targets[:MAX_TARGETS])
        return _json({"dry_run": True, "action": body.action, "filter": body.filter.given(),
                      "matched": min(len(targets), MAX_TARGETS),
                      "over_limit": len(targets) > MAX_TARGETS, "sample": targets[:SAMPLE],
                      "by_status": statuses,
                      "to_act_on": sum(n for status, n in statuses.items()
                                       if status in ACTS_ON[body.action])})
    if len(targets) > MAX_TARGETS:
        raise _invalid(f"filter: matches more than {MAX_TARGETS} runs, more than one "
                       "operation takes; narrow it (created_before, a label)")
    operation_id = body.id or f"op-{uuid.uuid4().hex}"
    existing = await store.read(hw.pool, operation_id)
    if existing is not None:
        same = (existing["action"], existing["doc"]["filter"], existing["tenant"]) == (
            body.action, body.filter.given(), filters.tenant)
        if not same or not me.sees(existing["tenant"]):
            raise Problem(409, "Conflict", f"operation {operation_id} exists with another "
                          "action, filter or tenant")
        return _json(view(existing), 200)
    progress = Progress(operation_id, body.action, body.args(), body.filter.given(), targets,
                        filters.tenant, now_ms())
    runner = runner_of(request.app)
    await store.write(hw.producer, hw.pool, hw.settings, progress.record(now_ms()),
                      runner.owner, hw.settings.produce_timeout_s)
    runner.start(progress)
    row = await store.read(hw.pool, operation_id)
    return _json(view(row), 202, {"Location": f"/v1/operations/{operation_id}"})


@router.get("/v1/operations/{operation_id}",
            responses=problems(*READS, NOT_FOUND, meanings={404: "no such operation"}))
async def get_operation(request: Request, operation_id: str) -> Response:
    """An operation's progress and counts; 404 unknown (or another tenant's)."""
    row = await store.read(runtime(request).pool, operation_id)
    if row is None or not principal(request).sees(row["tenant"]):
        raise Problem(404, "Not found", f"no operation {operation_id}")
    return _json(view(row))


@router.get("/v1/operations", responses=problems(*READS, INVALID_REQUEST))
async def get_operations(request: Request,
                         limit: int = Query(default=20, ge=1, le=200)) -> Response:
    """The latest operations, newest first (the caller's tenant's)."""
    me = principal(request)
    tenant, _ = list_tenant(me, None)
    rows = await runtime(request).pool.fetch(
        "select * from operations where ($1::text is null or tenant = $1)"
        " order by created_at desc, operation_id desc limit $2", tenant, limit)
    return _json({"items": [view(r) for r in rows]})


def runner_of(app: FastAPI) -> Runner:
    """The app's ``Runner`` (made at its first use)."""
    runner = getattr(app.state, "operations", None)
    if not isinstance(runner, Runner):
        runner = app.state.operations = Runner(app.state.hw)
    return runner


async def start(app: FastAPI) -> None:
    """Read the operations topic into the table, then go on with the operations left
    running (``Runner``), now and every ``RESUME_SHARE`` of the lease."""
    hw = app.state.hw
    while True:
        try:
            applied = await store.rebuild(hw.pool, hw.settings)
            break
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.warning("reading the operations topic failed (%r); reading it again", e)
        await asyncio.sleep(1.0)
    log.info("read %d records from %s", applied, hw.settings.topics.operations)
    runner_of(app).resume_every(hw.settings.operations_lease_s * RESUME_SHARE)


async def stop(app: FastAPI) -> None:
    """Stop working on operations (they go on in another gateway, or this one again)."""
    await runner_of(app).stop()
