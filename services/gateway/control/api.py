"""HTTP routes of API v1 that control a running workflow (the HTTP table of docs/http-api.md;
docs/architecture.md §4): cancel it, and signal one of its waits."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path, Request
from starlette.responses import Response

from headwater.core.caching import CACHE_PREFIX
from headwater.core.limits import LIMITER_PREFIX, reserved_id
from services.gateway.auth.scope import principal, require_run
from services.gateway.control.models import CancelRequest, SignalRequest
from services.gateway.control.send import request_cancel, send_signal, signal_record
from services.gateway.edge.body import PAYLOAD_SETTING, parse_body, read_limited, require_storable
from services.gateway.edge.problems import CONFLICT, NOT_FOUND, RECORD_TOO_LARGE, Problem
from services.gateway.lifetime import accepting
from services.gateway.openapi.bodies import CANCEL_SCHEMA, SIGNAL_NAME_DOC, SIGNAL_SCHEMA, json_body
from services.gateway.openapi.problems import BODY, SIGNAL, WRITES, problems
from services.gateway.runs.api import NO_WORKFLOW, WorkflowId
from services.gateway.runs.claims import CANCEL_REQUESTED
from services.gateway.runs.facts import links

router = APIRouter()
CANCEL_BODY_BYTES = 64 * 1024
SignalName = Annotated[str, Path(json_schema_extra=SIGNAL_NAME_DOC)]
"""The ``{name}`` path parameter of a signal (its pattern documented, not enforced)."""


def not_a_limiter(workflow_id: str, what: str) -> None:
    """Refuse to cancel, signal or pause a limiter or a cache (``limits.reserved_id``): the
    coordinator dead-letters either (neither ends nor waits for a signal), so a 202
    would promise what never happens.

    Raises:
        Problem: 422 naming the reserved prefix.
    """
    if workflow_id.startswith(CACHE_PREFIX):
        fault = (f"workflow {workflow_id[:120]!r} is a cache (its id starts with "
                 f"{CACHE_PREFIX!r}): it keeps a task's results for one key and cannot be "
                 f"{what}; submit a run with ?cache=refresh to compute them afresh")
        raise Problem(422, "Invalid request", fault, errors=[fault])
    if reserved_id(workflow_id):
        fault = (f"workflow {workflow_id[:120]!r} is a limiter (its id starts with "
                 f"{LIMITER_PREFIX!r}): it keeps a concurrency or rate limit's key and "
                 f"cannot be {what}; PUT /v1/limits/{{key}} changes its limit")
        raise Problem(422, "Invalid request", fault, errors=[fault])


def _json(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json",
                    headers=headers)


@router.post("/v1/workflows/{workflow_id}/cancel", status_code=202,
             openapi_extra=json_body(CANCEL_SCHEMA, required=False),
             responses=problems(*WRITES, *BODY, NOT_FOUND, CONFLICT, meanings={
                 **NO_WORKFLOW, 409: "the workflow has already ended"}))
async def cancel_workflow(request: Request, workflow_id: WorkflowId) -> Response:
    """Request cancellation: 202; 404 unknown; 409 already terminal; 503."""
    hw = accepting(request)
    payload = parse_body(CancelRequest,
                         await read_limited(request, CANCEL_BODY_BYTES) or b"{}")
    require_storable({"reason": payload.reason})
    await require_run(hw.pool, principal(request), workflow_id)
    not_a_limiter(workflow_id, "cancelled")
    await request_cancel(hw.pool, hw.outlet, workflow_id, payload.reason)
    return _json({"id": workflow_id, "status": CANCEL_REQUESTED,
                  "links": links(workflow_id)}, 202)


@router.post("/v1/workflows/{workflow_id}/signals/{name}", status_code=202,
             openapi_extra=json_body(SIGNAL_SCHEMA),
             responses=problems(*WRITES, *BODY, *SIGNAL, RECORD_TOO_LARGE, meanings={
                 **NO_WORKFLOW, 409: "the workflow has already ended"}))
async def signal_workflow(request: Request, workflow_id: WorkflowId,
                          name: SignalName) -> Response:
    """Signal a wait node: 202 once the signal is on Kafka (with ``warnings`` when a code
    workflow waits for signals of other names now); 400 when no wait takes it; 404
    unknown; 409 ended; 413; 422 a malformed body; 503."""
    hw = accepting(request)
    payload = parse_body(SignalRequest, await read_limited(
        request, hw.settings.max_payload_bytes, PAYLOAD_SETTING))
    require_storable({"signal_id": payload.signal_id, "fields": payload.fields})
    signal = signal_record(workflow_id, name, payload)
    await require_run(hw.pool, principal(request), workflow_id)
    not_a_limiter(workflow_id, "signalled")
    warnings = await send_signal(hw.pool, hw.outlet, signal, principal(request))
    return _json({"workflow_id": workflow_id, "signal": name, "signal_id": signal.signal_id,
                  **({"warnings": warnings} if warnings else {}),
                  "links": links(workflow_id)}, 202)
