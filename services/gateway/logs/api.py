"""HTTP routes of the task logs (docs/http-api.md, "Task logs"): a task's lines, paged or
followed (``?follow=true``: SSE), and a run's lines, paged. Tenant-scoped like the run's
document: another tenant's run is 404."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, Path, Query, Request
from pydantic import BaseModel, Field
from sse_starlette.sse import EventSourceResponse
from starlette.responses import Response

from services.gateway.auth.scope import not_found, principal, require_run
from services.gateway.edge.problems import (
    BAD_CURSOR,
    BAD_LAST_EVENT_ID,
    INVALID_REQUEST,
    NOT_FOUND,
    Problem,
)
from services.gateway.lifetime import runtime
from services.gateway.logs.follow import follow_task
from services.gateway.logs.reads import (
    TaskRef,
    complete,
    encode_run_cursor,
    line_doc,
    parse_index,
    run_cursor,
    run_lines,
    task_cursor,
    task_lines,
)
from services.gateway.openapi.bodies import WORKFLOW_ID_DOC
from services.gateway.openapi.problems import READS, problems

router = APIRouter()
WorkflowId = Annotated[str, Path(json_schema_extra=WORKFLOW_ID_DOC)]
NO_WORKFLOW = {404: "no such workflow"}


class TaskLogsQuery(BaseModel):
    """The query parameters of a task's log."""

    attempt: int | None = Field(default=None, ge=1, le=2**31 - 1,
                                description="one attempt (default: all)")
    after: str | None = Field(default=None, description="a cursor: <attempt>:<line>, as "
                                                        "next gives it")
    limit: int = Field(default=500, ge=1, le=1000, description="most lines in the answer")
    follow: bool = Field(default=False, description="Server-Sent Events until the task's "
                                                    "log is complete")


class RunLogsQuery(BaseModel):
    """The query parameters of a run's logs."""

    node: str | None = Field(default=None, description="one node's tasks (default: all)")
    after: str | None = Field(default=None, description="a cursor, as next gives it")
    limit: int = Field(default=500, ge=1, le=1000, description="most lines in the answer")


def _json(doc: Any) -> Response:
    return Response(orjson.dumps(doc), media_type="application/json")


async def _visible(request: Request, workflow_id: str, node: str | None = None) -> None:
    """Return when the request's principal may read the run and, given a ``node``, the
    run's spec has that node; 404 otherwise (naming the run's nodes)."""
    hw = runtime(request)
    await require_run(hw.pool, principal(request), workflow_id)
    spec = await hw.pool.fetchval("select spec from workflows where workflow_id = $1",
                                  workflow_id)
    if spec is None:
        raise not_found(workflow_id)
    nodes = [n.get("id") for n in spec.get("nodes") or [] if isinstance(n, dict)] \
        if isinstance(spec, dict) else []
    if node is not None and node not in nodes:
        raise Problem(404, "Not found", f"workflow {workflow_id} has no node {node!r}; its "
                      f"nodes: {', '.join(repr(str(n)) for n in nodes)}")


@router.get("/v1/workflows/{workflow_id}/tasks/{node}/{index}/logs",
            responses={200: {"content": {"text/event-stream": {}}},
                       **problems(*READS, BAD_CURSOR, BAD_LAST_EVENT_ID, INVALID_REQUEST,
                                  NOT_FOUND, meanings=NO_WORKFLOW)})
async def get_task_logs(
    request: Request, workflow_id: WorkflowId, node: str,
    index: Annotated[str, Path(description="the map item's or loop step's number, or - "
                                           "for a node without index")],
    query: Annotated[TaskLogsQuery, Query()],
    last_event_id: Annotated[str | None, Header(
        json_schema_extra={"pattern": "^([0-9]{1,9}:[0-9]{1,9})?$"})] = None,
) -> Response:
    """A task's log lines in (attempt, line) order, with ``next`` (the cursor after the
    last line; null once ``complete`` and read to the end) and ``complete`` (no line can
    come any more); with ``follow=true`` a ``text/event-stream`` of ``log`` events (id
    ``<attempt>:<line>``, resumed after ``Last-Event-ID``), ended by an ``end`` event.

    Raises:
        Problem: 400 for a bad cursor or ``Last-Event-ID``, 404 for an unknown run (or
            another tenant's), 422 for an index that is neither ``-`` nor a number.
    """
    hw = runtime(request)
    task = TaskRef(workflow_id, node, parse_index(index))
    attempt, limit = query.attempt, query.limit
    start = task_cursor(query.after)
    if query.follow and last_event_id:
        start = task_cursor(last_event_id, header=True)
    await _visible(request, workflow_id, node)
    if query.follow:
        return EventSourceResponse(follow_task(hw.pool, hw.notifier, task, attempt, start),
                                   ping=hw.settings.sse_ping_s)
    done = await complete(hw.pool, task, attempt)  # before the lines: see follow_task
    rows = await task_lines(hw.pool, task, attempt, start, limit)
    last = (rows[-1]["attempt"], rows[-1]["line"]) if rows else start
    drained = done and len(rows) < limit
    return _json({"workflow_id": workflow_id, "node": node, "index": task.index,
                  "lines": [line_doc(r) for r in rows],
                  "next": None if drained else f"{last[0]}:{last[1]}",
                  "complete": drained})


@router.get("/v1/workflows/{workflow_id}/logs",
            responses=problems(*READS, BAD_CURSOR, INVALID_REQUEST, NOT_FOUND,
                               meanings=NO_WORKFLOW))
async def get_run_logs(
    request: Request, workflow_id: WorkflowId,
    query: Annotated[RunLogsQuery, Query()],
) -> Response:
    """Every task's log lines of a run (of ``node`` alone if given) in (node, index,
    attempt, line) order, each with its ``node`` and ``index``, and ``next`` (the cursor
    of the next page; null: none so far).

    Raises:
        Problem: 400 for a bad cursor, 404 for an unknown run (or another tenant's).
    """
    hw = runtime(request)
    start = run_cursor(query.after)
    await _visible(request, workflow_id, query.node)
    rows = await run_lines(hw.pool, workflow_id, query.node, start, query.limit)
    return _json({"workflow_id": workflow_id,
                  "lines": [line_doc(r, with_task=True) for r in rows],
                  "next": encode_run_cursor(rows[-1]) if len(rows) == query.limit else None})

