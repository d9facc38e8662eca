"""HTTP routes of API v1 for workflow runs (the HTTP table of docs/http-api.md;
docs/architecture.md §4): submit, read one, list, and follow a run's events. Cancels and
signals are ``control.api``'s; ``POST /v1/run/{name}`` is ``runs.run``'s."""

from __future__ import annotations

import dataclasses
import re
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, Path, Query, Request
from pydantic import BaseModel, Field
from sse_starlette.sse import EventSourceResponse
from starlette.responses import Response

from headwater.core.status import WorkflowStatus
from services.gateway.auth.scope import list_tenant, not_found, principal, require_run, submission
from services.gateway.blobs import hrefs
from services.gateway.edge.body import PAYLOAD_SETTING, parse_body, read_limited
from services.gateway.edge.problems import (
    BAD_CURSOR,
    BAD_LAST_EVENT_ID,
    INVALID_REQUEST,
    NOT_FOUND,
    Problem,
)
from services.gateway.lifetime import accepting, runtime
from services.gateway.openapi.bodies import (
    SUBMIT_MEANINGS,
    SUBMIT_SCHEMA,
    WORKFLOW_ID_DOC,
    json_body,
)
from services.gateway.openapi.problems import BODY, READS, SUBMISSION, WRITES, problems
from services.gateway.runs.claims import CLAIMED
from services.gateway.runs.listing import (
    label_selectors,
    list_filter,
    list_view,
    paused_filter,
)
from services.gateway.runs.models import CacheQuery, SubmitRequest
from services.gateway.runs.modes import accepted_doc
from services.gateway.runs.stream import history_stream
from services.gateway.runs.submit import submit
from services.gateway.runs.views import workflow_view

router = APIRouter()
STATUSES = (CLAIMED, *WorkflowStatus)
"""The statuses ``GET /v1/workflows?status=`` filters by."""
# ASCII digits only (str.isdigit also takes "²"), and few enough to fit in a bigint.
LAST_EVENT_ID = re.compile(r"[0-9]{1,18}")
WorkflowId = Annotated[str, Path(json_schema_extra=WORKFLOW_ID_DOC)]
"""The ``{workflow_id}`` path parameter (its pattern documented, not enforced)."""
NO_WORKFLOW = {404: "no such workflow"}
"""The meaning of a 404 of an operation on one workflow."""


def _json(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json",
                    headers=headers)


@router.post("/v1/workflows", status_code=202, openapi_extra=json_body(SUBMIT_SCHEMA),
             responses={200: {"description": "the same id and body again: the same run"},
                        **problems(*WRITES, *BODY, *SUBMISSION, meanings=SUBMIT_MEANINGS)})
async def post_workflow(request: Request, cache: CacheQuery = None) -> Response:
    """Submit a workflow: 202 (new), 200 (same id and body again), 400 (a task no live
    worker serves), 409, 413, 422, 429 (a queue over its maxdepth), 503.
    ``?cache=refresh``: the run bypasses cache hits (docs/architecture.md §4o)."""
    hw = accepting(request)
    body = await read_limited(request, hw.settings.max_payload_bytes, PAYLOAD_SETTING)
    payload = parse_body(SubmitRequest, body)
    me = principal(request)
    accepted = await submit(hw.pool, hw.outlet.with_cache(cache), submission(me, payload), me,
                            body_bytes=len(body))
    doc = accepted_doc(accepted.workflow_id, accepted.status, accepted.warnings)
    return _json(doc, 202 if accepted.created else 200,
                 {"Location": f"/v1/workflows/{accepted.workflow_id}"})


@router.get("/v1/workflows/{workflow_id}",
            responses=problems(*READS, NOT_FOUND, meanings=NO_WORKFLOW))
async def get_workflow(request: Request, workflow_id: WorkflowId) -> Response:
    """Status of one workflow; 404 when unknown. Besides nodes and tasks: ``parent`` and
    ``children`` (child workflows, both ways), ``waiting`` (open waits and their signal),
    ``signals``, ``next_wakeup``, and per node a ``when`` node's ``condition``, a wait's
    ``signal``/``waits``, a sleep's ``wake_at``, a loop's ``steps``/``spent``. A value
    held by reference is ``{"$blob", "bytes", "href"}``, ``href`` streaming its JSON
    (``GET /v1/workflows/{id}/blobs/{digest}``)."""
    doc = await workflow_view(runtime(request).pool, workflow_id)
    if not principal(request).sees(doc["tenant"]):
        raise not_found(workflow_id)
    return Response(hrefs.dumps(doc, workflow_id), media_type="application/json")


class ListQuery(BaseModel):
    """The query parameters of ``GET /v1/workflows`` (``listing.list_filter`` reads the
    definition and the instants)."""

    status: str | None = Field(default=None, pattern="^(" + "|".join(STATUSES) + ")$")
    name: str | None = None
    tenant: str | None = None
    definition: str | None = Field(
        default=None, description="a registered definition's name, or name@version")
    created_after: str | None = Field(
        default=None, description="RFC 3339 date-time with a UTC offset: created after it "
                                  "(exclusive)")
    created_before: str | None = Field(
        default=None, description="RFC 3339 date-time with a UTC offset: created before it "
                                  "(exclusive)")
    label: list[str] = Field(default_factory=list, description=(
        "key:value (or key: any value): only runs carrying that label; repeat for all "
        "of several"))
    paused: str | None = Field(default=None, description=(
        "true: only runs paused now; false: only the others (a run that has ended is "
        "not paused)"))
    limit: int = Field(default=50, ge=1, le=500)
    cursor: str | None = None


@router.get("/v1/workflows", responses=problems(*READS, BAD_CURSOR, INVALID_REQUEST))
async def get_workflows(request: Request, query: Annotated[ListQuery, Query()]) -> Response:
    """Workflows newest first, filtered by status, name, tenant, definition, creation
    time, labels (``?label=team:search&label=env:prod``: all of them) and whether paused
    (``?paused=true|false``), cursor-paged;
    400 for a bad cursor, 422 for a malformed parameter (named)."""
    hw = runtime(request)
    tenant, empty = list_tenant(principal(request), query.tenant)
    filters = list_filter(query.status, query.name, tenant, query.definition,
                          query.created_after, query.created_before)
    filters = dataclasses.replace(filters, labels=label_selectors(query.label),
                                  paused=paused_filter(query.paused))
    if empty:  # another tenant's runs: none to show
        return _json({"items": [], "next_cursor": None})
    return _json(await list_view(hw.pool, filters, query.limit, query.cursor))


@router.get("/v1/workflows/{workflow_id}/events", response_class=EventSourceResponse,
            responses={200: {"content": {"text/event-stream": {}}},
                       **problems(*READS, BAD_LAST_EVENT_ID, NOT_FOUND, meanings=NO_WORKFLOW)})
async def get_events(
    request: Request, workflow_id: WorkflowId,
    last_event_id: Annotated[str | None, Header(
        json_schema_extra={"pattern": "^[0-9]{0,18}$"})] = None,
) -> EventSourceResponse:
    """SSE stream of the workflow's history; honours ``Last-Event-ID``.

    Raises:
        Problem: 400 when ``Last-Event-ID`` is not 1 to 18 ASCII digits (empty: from the
            start), 404 unknown id.
    """
    hw = runtime(request)
    after = 0
    if last_event_id:
        if not LAST_EVENT_ID.fullmatch(last_event_id):
            raise Problem(400, "Bad Last-Event-ID",
                          "Last-Event-ID must be a seq number: 1 to 18 digits 0-9")
        after = int(last_event_id)
    await require_run(hw.pool, principal(request), workflow_id)
    exists = await hw.pool.fetchval("select 1 from workflows where workflow_id = $1",
                                    workflow_id)
    if not exists:
        raise not_found(workflow_id)
    return EventSourceResponse(history_stream(hw.pool, hw.notifier, workflow_id, after),
                               ping=hw.settings.sse_ping_s)
