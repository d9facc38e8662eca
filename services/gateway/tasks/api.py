"""HTTP routes of API v1 for a run's tasks (the HTTP table of docs/http-api.md): one task
with every attempt, and a node's tasks a page at a time. Both are scoped by tenant as
the run's document is (another tenant's run is 404)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, Field
from starlette.responses import Response

from headwater.core.status import TaskStatus
from services.gateway.auth.scope import not_found, principal
from services.gateway.blobs import hrefs
from services.gateway.edge.problems import INVALID_REQUEST, NOT_FOUND, Problem
from services.gateway.lifetime import runtime
from services.gateway.openapi.bodies import WORKFLOW_ID_DOC
from services.gateway.openapi.problems import READS, problems
from services.gateway.queues.marks import requires_of
from services.gateway.tasks import reads
from services.gateway.tasks.views import parse_index, task_document, task_view

router = APIRouter()
WorkflowId = Annotated[str, Path(json_schema_extra=WORKFLOW_ID_DOC)]
NodeId = Annotated[str, Path(description="a node's id in the run's spec")]
TaskIndex = Annotated[str, Path(
    description="the task's index (a map item's, a loop's task: 2k decides step k, 2k+1 "
                "runs its tool), or - for a node without index",
    json_schema_extra={"pattern": "^(-|[0-9]{1,9})$"})]
MEANINGS = {404: "no such workflow, or no such task (node) in it"}
"""The meaning of a 404 of these operations."""


def _json(doc: Any, workflow_id: str) -> Response:
    """``doc`` as JSON, its references with their ``href`` (``blobs.hrefs``)."""
    return Response(hrefs.dumps(doc, workflow_id), media_type="application/json")


def _spec_nodes(spec: Any) -> set[str]:
    nodes = spec.get("nodes") if isinstance(spec, dict) else None
    return {n["id"] for n in nodes or [] if isinstance(n, dict) and isinstance(n.get("id"), str)}


@router.get("/v1/workflows/{workflow_id}/tasks/{node}/{index}",
            responses=problems(*READS, NOT_FOUND, INVALID_REQUEST, meanings=MEANINGS))
async def get_task(request: Request, workflow_id: WorkflowId, node: NodeId,
                   index: TaskIndex) -> Response:
    """One task of a run: its task and queue, status, input and output, and every
    attempt with its worker, times, error, error type and traceback; 404 for an unknown
    run or task, 422 for an index that is neither an integer nor ``-``."""
    at = parse_index(index)
    async with runtime(request).pool.acquire() as conn:
        run = await reads.run_row(conn, workflow_id)
        if run is None or not principal(request).sees(run["tenant"]):
            raise not_found(workflow_id)
        row = await reads.task_row(conn, workflow_id, node, at)
        if row is None:
            raise Problem(404, "Not found", f"no task {node}[{index}] in workflow "
                          f"{workflow_id} (not dispatched yet, or no such node)")
        events = await reads.attempt_events(conn, workflow_id, row)
    return _json(task_document(workflow_id, row, events), workflow_id)


class NodeTasksQuery(BaseModel):
    """The query parameters of ``GET /v1/workflows/{id}/nodes/{node}/tasks``."""

    after: int | None = Field(default=None, ge=-1, le=999_999_999,
                              description="the index after which the page starts (the "
                                          "previous page's next)")
    limit: int = Field(default=100, ge=1, le=500)
    status: TaskStatus | None = None


@router.get("/v1/workflows/{workflow_id}/nodes/{node}/tasks",
            responses=problems(*READS, NOT_FOUND, INVALID_REQUEST, meanings=MEANINGS))
async def get_node_tasks(request: Request, workflow_id: WorkflowId, node: NodeId,
                         query: Annotated[NodeTasksQuery, Query()]) -> Response:
    """A node's tasks in index order, a page at a time (``after``, ``limit``, and
    ``status`` to keep only those), with how many there are and the next page's
    ``after``; 404 for an unknown run or node."""
    async with runtime(request).pool.acquire() as conn:
        run = await reads.run_row(conn, workflow_id)
        if run is None or not principal(request).sees(run["tenant"]):
            raise not_found(workflow_id)
        if node not in _spec_nodes(run["spec"]):
            raise Problem(404, "Not found", f"no node {node} in workflow {workflow_id}")
        status = query.status.value if query.status is not None else None
        page = await reads.node_page(conn, workflow_id, node, query.after, query.limit, status)
    return _json({"workflow_id": workflow_id, "node": node, "total": page.total,
                  "tasks": [task_view(t, requires_of(run["spec"])) for t in page.rows],
                  "next": page.next}, workflow_id)
