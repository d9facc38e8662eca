"""``GET /v1/workflows/{id}/signals/{signal_id}``: what became of a signal (``fate``)."""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Path, Request
from starlette.responses import Response

from services.gateway.auth.scope import principal, require_run
from services.gateway.edge.problems import NOT_FOUND
from services.gateway.lifetime import runtime
from services.gateway.openapi.problems import READS, problems
from services.gateway.runs.api import WorkflowId
from services.gateway.signals.fate import fate

router = APIRouter()
SignalId = Annotated[str, Path(description="the signal's signal_id (the sender's, or the "
                                           "one the gateway's 202 named)")]


@router.get("/v1/workflows/{workflow_id}/signals/{signal_id}",
            responses=problems(*READS, NOT_FOUND, meanings={
                404: "no such workflow, or no signal of that id was sent to it"}))
async def get_signal(request: Request, workflow_id: WorkflowId,
                     signal_id: SignalId) -> Response:
    """A signal's fate: ``received`` (answered 202, not applied yet), ``buffered`` (kept
    until its wait starts), ``consumed`` (by ``node``, ``at``), ``discarded`` or
    ``refused`` (``reason``: e.g. the run had ended); 404 for an id never sent to the
    run."""
    hw = runtime(request)
    await require_run(hw.pool, principal(request), workflow_id)
    doc = await fate(hw.pool, workflow_id, signal_id)
    return Response(orjson.dumps(doc), media_type="application/json")
