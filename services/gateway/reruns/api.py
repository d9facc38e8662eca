"""HTTP routes that run an ended run again (the HTTP table of docs/http-api.md): a rerun
from what failed, and a reset to a node. Each is a new run under a new id, linked both
ways (its ``rerun_of``, the source's ``reruns``), submitted as any submission is."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from headwater import codec
from headwater.core import events as ev
from services.common.auth.tokens import Principal
from services.gateway.auth.scope import not_found, principal, require_run, submission
from services.gateway.edge.body import PAYLOAD_SETTING, parse_body, read_limited
from services.gateway.edge.problems import Problem
from services.gateway.lifetime import Runtime, accepting
from services.gateway.openapi.bodies import RERUN_SCHEMA, RESET_SCHEMA, json_body
from services.gateway.openapi.problems import BODY, SUBMISSION, WRITES, problems
from services.gateway.reruns.models import RerunRequest, ResetRequest
from services.gateway.reruns.plan import PlanError, fold, reuse
from services.gateway.runs.api import NO_WORKFLOW, WorkflowId
from services.gateway.runs.claims import Accepted
from services.gateway.runs.facts import links
from services.gateway.runs.models import CacheQuery, SubmitRequest
from services.gateway.runs.submit import submit_rerun

router = APIRouter()

RERUNNABLE = ("failed", "cancelled")
"""The statuses a rerun starts from (a reset takes any ended run)."""
ENDED = ("succeeded", "failed", "cancelled")

_MEANINGS = {**NO_WORKFLOW, 409: "the workflow has not ended (a rerun: or it succeeded), "
             "or the new id is taken by another body", 422: "the body does not fit, or "
             "(a reset) names no node of the run"}


def _json(doc: Any, status: int, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json",
                    headers=headers)


@router.post("/v1/workflows/{workflow_id}/rerun", status_code=202,
             openapi_extra=json_body(RERUN_SCHEMA, required=False),
             responses={200: {"description": "the same id and body again: the same run"},
                        **problems(*WRITES, *BODY, *SUBMISSION, meanings=_MEANINGS)})
async def rerun_workflow(request: Request, workflow_id: WorkflowId,
                         cache: CacheQuery = None) -> Response:
    """Run a failed or cancelled run again under a new id: what succeeded is reused (its
    outputs, not run again; a map's succeeded items too), what failed, was cancelled or
    never ran runs; optionally with a new ``input``; ``?cache=refresh``: the cached nodes
    that run compute afresh. 202 (new), 200 (same id and body again), 404, 409 (not
    ended, or succeeded), 422, 503."""
    hw = accepting(request)
    body = await read_limited(request, hw.settings.max_payload_bytes,
                                       PAYLOAD_SETTING) or b"{}"
    return await _start(request, workflow_id, parse_body(RerunRequest, body), None, cache)


@router.post("/v1/workflows/{workflow_id}/reset", status_code=202,
             openapi_extra=json_body(RESET_SCHEMA),
             responses={200: {"description": "the same id and body again: the same run"},
                        **problems(*WRITES, *BODY, *SUBMISSION, meanings=_MEANINGS)})
async def reset_workflow(request: Request, workflow_id: WorkflowId,
                         cache: CacheQuery = None) -> Response:
    """Run an ended run again from ``node`` under a new id: that node and everything
    downstream of it run again, the rest is reused from the source. A cached node among
    them takes the output stored under its key (its source's own, often) unless
    ``?cache=refresh``. 202, 200 (same id and body again), 404, 409 (not ended), 422 (no
    such node), 503."""
    hw = accepting(request)
    payload = parse_body(ResetRequest, await read_limited(request, hw.settings.max_payload_bytes,
                                       PAYLOAD_SETTING))
    return await _start(request, workflow_id, payload, payload.node, cache)


async def _start(request: Request, source: str, payload: RerunRequest,
                 reset: str | None, cache: str | None) -> Response:
    accepted = await start_rerun(accepting(request), principal(request), source, payload,
                                 reset, cache)
    doc = {"id": accepted.workflow_id, "status": accepted.status, "rerun_of": source,
           "reset": reset, "links": links(accepted.workflow_id)}
    return _json(doc, 202 if accepted.created else 200,
                 {"Location": f"/v1/workflows/{accepted.workflow_id}"})


async def start_rerun(hw: Runtime, me: Principal, source: str, payload: RerunRequest,
                      reset: str | None, cache: str | None) -> Accepted:
    """Submit the rerun (``reset`` None) or the reset of ``source`` that ``payload``
    asks for, as ``me``; the routes' and a bulk rerun's (``operations.actions``).

    Raises:
        Problem: 404 (unknown or another tenant's source), 409 (not ended, or a rerun of
            one that succeeded, or the new id taken by another body), 413, 422, 503.
    """
    await require_run(hw.pool, me, source)
    row = await _source_row(hw.pool, source)
    allowed = ENDED if reset is not None else RERUNNABLE
    if row["status"] not in allowed:
        what = "has not ended" if row["status"] not in ENDED else "succeeded (reset it to a node)"
        raise Problem(409, "Conflict", f"workflow {source} {what}; a "
                      f"{'reset' if reset else 'rerun'} needs one that "
                      f"{'ended' if reset else 'failed or was cancelled'}",
                      workflow_id=source, status_now=row["status"])
    events = await hw.pool.fetch(
        "select seq, type, data from events where workflow_id = $1 order by seq", source)
    if not events:  # its rows were deleted (projection retention) since its row was read
        raise not_found(source)
    try:
        state = await asyncio.to_thread(fold, [(r["seq"], r["type"], r["data"])
                                               for r in events], source)
        document = reuse(state, reset)
    except PlanError as e:
        if (reset is not None and reset.partition(":")[0] not in _nodes(row)) or (
                reset is not None and ":" in reset):
            raise Problem(422, "Invalid request", str(e), errors=[f"node: {e}"]) from e
        raise Problem(409, "Conflict", str(e), workflow_id=source) from e
    given, new_input = payload.new_input
    # As a submission's: an id of the forms Headwater derives is refused (422, or 403).
    request_doc = submission(me, SubmitRequest(
        id=payload.id, workflow=state.spec_doc, input=new_input if given else state.input,
        tenant=row["tenant"]))
    await asyncio.to_thread(_check_size, request_doc, document,
                            hw.settings.max_message_bytes)
    return await submit_rerun(hw.pool, hw.outlet.with_cache(cache), request_doc,
                              (state.definition, state.definition_version), document,
                              me if given else None)


HISTORY_MARGIN_BYTES = 8192
"""What the new run's ``WorkflowAccepted`` (the submission's spec, input and rerun
document, in a history envelope) and the coordinator's framing margin may add to the
submission's size: a rerun whose submission is within this of the record limit would be
accepted here and dead-lettered by its coordinator, so it is refused at once."""


def _check_size(request: SubmitRequest, document: dict[str, Any], max_bytes: int) -> None:
    """Refuse (413) a rerun whose records would be over the limit. Runs in a thread."""
    record = ev.WorkflowSubmitted(request.id or "", request.workflow, request.input, 0,
                                  request.tenant, rerun=document)
    size, room = len(codec.encode(record)), max_bytes - HISTORY_MARGIN_BYTES
    if size > room:
        raise Problem(413, "Record too large", f"the rerun's submission is {size} bytes with "
                      f"the outputs it reuses, over the {room} its history can take "
                      f"(HEADWATER_MAX_MESSAGE_BYTES {max_bytes} less {HISTORY_MARGIN_BYTES})"
                      "; reset to an earlier node to reuse less", workflow_id=request.id,
                      record_bytes=size, max_record_bytes=room)


async def _source_row(pool: asyncpg.Pool, workflow_id: str) -> Any:
    row = await pool.fetchrow(
        "select status, tenant, spec from workflows where workflow_id = $1 and seq > 0",
        workflow_id)
    if row is None:
        raise not_found(workflow_id)
    return row


def _nodes(row: Any) -> set[str]:
    spec = row["spec"]
    nodes = spec.get("nodes") if isinstance(spec, dict) else None
    return {str(n.get("id")) for n in nodes or [] if isinstance(n, dict)}
