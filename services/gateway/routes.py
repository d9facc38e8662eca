"""HTTP routes of API v1 (DESIGN.md §4)."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, Query, Request
from pydantic import ValidationError
from sse_starlette.sse import EventSourceResponse
from starlette.responses import Response

from services.gateway.models import CancelRequest, SubmitRequest
from services.gateway.problems import Problem
from services.gateway.stream import history_stream
from services.gateway.submit import request_cancel, submit
from services.gateway.views import links, list_view, workflow_view

router = APIRouter()


def runtime(request: Request) -> Any:
    """The gateway's connections. Raises ``Problem`` 503 while still connecting."""
    hw = request.app.state.hw
    if not hw.ready:
        raise Problem(503, "Not ready", "still connecting to Kafka and PostgreSQL",
                      headers={"Retry-After": "1"})
    return hw
STATUSES = ("accepted", "running", "succeeded", "failed", "cancelled")


def _json(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json",
                    headers=headers)


@router.post("/v1/workflows")
async def post_workflow(request: Request) -> Response:
    """Submit a workflow: 202 (new), 200 (same id and body again), 409, 413, 422."""
    hw = runtime(request)
    body = await _read_limited(request, hw.settings.max_body_bytes)
    try:
        payload = SubmitRequest.model_validate_json(body)
    except ValidationError as e:
        errors = [f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"
                  for err in e.errors()]
        raise Problem(422, "Invalid request", "; ".join(errors), errors=errors) from e
    accepted = await submit(hw.pool, hw.producer, hw.settings.topics, payload)
    doc = {"id": accepted.workflow_id, "status": accepted.status,
           "links": links(accepted.workflow_id)}
    return _json(doc, 202 if accepted.created else 200,
                 {"Location": f"/v1/workflows/{accepted.workflow_id}"})


async def _read_limited(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise Problem(413, "Request too large", f"the body exceeds {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Problem(413, "Request too large", f"the body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


@router.get("/v1/workflows/{workflow_id}")
async def get_workflow(request: Request, workflow_id: str) -> Response:
    """Status of one workflow; 404 when unknown."""
    return _json(await workflow_view(runtime(request).pool, workflow_id))


@router.get("/v1/workflows")
async def get_workflows(
    request: Request,
    status: Annotated[str | None, Query(pattern="^(" + "|".join(STATUSES) + ")$")] = None,
    name: str | None = None,
    tenant: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: str | None = None,
) -> Response:
    """Workflows newest first, filtered by status, name and tenant, cursor-paged."""
    hw = runtime(request)
    return _json(await list_view(hw.pool, status, name, tenant, limit, cursor))


@router.get("/v1/workflows/{workflow_id}/events")
async def get_events(
    request: Request, workflow_id: str,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """SSE stream of the workflow's history; honours ``Last-Event-ID``."""
    hw = runtime(request)
    exists = await hw.pool.fetchval("select 1 from workflows where workflow_id = $1",
                                    workflow_id)
    if not exists:
        raise Problem(404, "Not found", f"no workflow {workflow_id}")
    after = 0
    if last_event_id:
        if not last_event_id.strip().isdigit():
            raise Problem(400, "Bad Last-Event-ID", "Last-Event-ID must be a seq number")
        after = int(last_event_id)
    return EventSourceResponse(history_stream(hw.pool, hw.notifier, workflow_id, after),
                               ping=hw.settings.sse_ping_s)


@router.post("/v1/workflows/{workflow_id}/cancel")
async def cancel_workflow(request: Request, workflow_id: str) -> Response:
    """Request cancellation: 202; 404 unknown; 409 already terminal."""
    hw = runtime(request)
    body = await _read_limited(request, 64 * 1024)
    try:
        payload = CancelRequest.model_validate_json(body or b"{}")
    except ValidationError as e:
        errors = [f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"
                  for err in e.errors()]
        raise Problem(422, "Invalid request", "; ".join(errors), errors=errors) from e
    await request_cancel(hw.pool, hw.producer, hw.settings.topics, workflow_id, payload.reason)
    return _json({"id": workflow_id, "status": "cancel_requested",
                  "links": links(workflow_id)}, 202)


@router.get("/health")
async def health() -> Response:
    """Liveness: the process answers."""
    return _json({"status": "ok"})


@router.get("/ready")
async def ready(request: Request) -> Response:
    """Readiness: 503 until Kafka and PostgreSQL are connected."""
    runtime(request)
    return _json({"status": "ready"})
