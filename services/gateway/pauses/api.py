"""HTTP routes of API v1 that pause and resume runs (the HTTP table of docs/http-api.md;
docs/architecture.md §4s): one run (role ``submit``, as a cancel), and every run of a
definition (role ``admin``: it changes the definition, ``pauses/definitions.py``)."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from services.gateway.auth.scope import principal, require_run
from services.gateway.control.api import not_a_limiter
from services.gateway.definitions.api import DefinitionName
from services.gateway.definitions.registry import head_of, unknown_named
from services.gateway.edge.body import parse_body, read_limited, require_storable
from services.gateway.edge.problems import CONFLICT, NOT_FOUND
from services.gateway.lifetime import accepting
from services.gateway.openapi.bodies import (
    DEFINITION_PAUSE_BODY,
    DEFINITION_RESUME_BODY,
    PAUSE_SCHEMA,
    RESUME_SCHEMA,
    json_body,
)
from services.gateway.openapi.problems import BODY, WRITES, problems
from services.gateway.pauses.definitions import pause_definition
from services.gateway.pauses.models import (
    DefinitionPauseRequest,
    DefinitionResumeRequest,
    PauseRequest,
    ResumeRequest,
)
from services.gateway.pauses.send import (
    PAUSE_REQUESTED,
    RESUME_REQUESTED,
    pause_record,
    request_pause,
    who,
)
from services.gateway.runs.api import NO_WORKFLOW, WorkflowId
from services.gateway.runs.facts import links

router = APIRouter()
PAUSE_BODY_BYTES = 64 * 1024


def _json(doc: Any, status: int = 202) -> Response:
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json")


async def _pause_or_resume(request: Request, workflow_id: str, pause: bool) -> Response:
    hw = accepting(request)
    body = await read_limited(request, PAUSE_BODY_BYTES) or b"{}"
    payload = parse_body(PauseRequest, body) if pause else parse_body(ResumeRequest, body)
    reason = payload.reason if isinstance(payload, PauseRequest) else ""
    require_storable({"reason": reason, "request_id": payload.request_id})
    me = principal(request)
    await require_run(hw.pool, me, workflow_id)
    not_a_limiter(workflow_id, "paused" if pause else "resumed")
    record = pause_record(workflow_id, pause, who(me), reason, payload.request_id)
    paused = await request_pause(hw.pool, hw.outlet, record)
    return _json({"id": workflow_id, "status": PAUSE_REQUESTED if pause else RESUME_REQUESTED,
                  "request_id": record.request_id, "was_paused": paused is not None,
                  "links": links(workflow_id)})


@router.post("/v1/workflows/{workflow_id}/pause", status_code=202,
             openapi_extra=json_body(PAUSE_SCHEMA, required=False),
             responses=problems(*WRITES, *BODY, NOT_FOUND, CONFLICT, meanings={
                 **NO_WORKFLOW, 409: "the workflow has already ended"}))
async def pause_workflow(request: Request, workflow_id: WorkflowId) -> Response:
    """Pause a run: it dispatches nothing new until resumed (attempts running go on):
    202; 404 unknown; 409 ended; 503."""
    return await _pause_or_resume(request, workflow_id, True)


@router.post("/v1/workflows/{workflow_id}/resume", status_code=202,
             openapi_extra=json_body(RESUME_SCHEMA, required=False),
             responses=problems(*WRITES, *BODY, NOT_FOUND, CONFLICT, meanings={
                 **NO_WORKFLOW, 409: "the workflow has already ended"}))
async def resume_workflow(request: Request, workflow_id: WorkflowId) -> Response:
    """Resume a paused run: what it held is dispatched, the timers that came due fire:
    202; 404 unknown; 409 ended; 503."""
    return await _pause_or_resume(request, workflow_id, False)


async def _definition(request: Request, name: str, pause: bool) -> Response:
    hw = accepting(request)
    body = await read_limited(request, PAUSE_BODY_BYTES) or b"{}"
    reason = ""
    if pause:
        reason = parse_body(DefinitionPauseRequest, body).reason
    else:
        parse_body(DefinitionResumeRequest, body)  # no fields: any is a 422
    require_storable({"reason": reason})
    me = principal(request)
    head = await head_of(hw.pool, name, me)
    if head is None or (head["deleted"] and pause):  # a deleted one's pause can end
        raise await unknown_named(hw.pool, name, me)
    runs = await pause_definition(hw.pool, hw.outlet, name, pause, me, reason)
    return _json({"definition": name, "paused": pause, "runs": runs,
                  "links": {"self": f"/v1/definitions/{name}"}})


@router.post("/v1/definitions/{name}/pause", status_code=202,
             openapi_extra=json_body(DEFINITION_PAUSE_BODY, required=False),
             responses=problems(*WRITES, *BODY, NOT_FOUND, meanings={
                 404: "no such definition"}))
async def pause_definition_runs(request: Request, name: DefinitionName) -> Response:
    """Pause a definition (role admin): its new runs start paused and its running runs
    are paused, one request each (``runs``: how many): 202; 404 unknown; 503."""
    return await _definition(request, name, True)


@router.post("/v1/definitions/{name}/resume", status_code=202,
             openapi_extra=json_body(DEFINITION_RESUME_BODY, required=False),
             responses=problems(*WRITES, *BODY, NOT_FOUND, meanings={
                 404: "no such definition"}))
async def resume_definition_runs(request: Request, name: DefinitionName) -> Response:
    """Resume a definition (role admin): its new runs start running and the runs its
    pause paused are resumed (``runs``: how many), a deleted definition's too (its runs
    would stay paused): 202; 404 unknown; 503."""
    return await _definition(request, name, False)
