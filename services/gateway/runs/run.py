"""``POST /v1/run/{name}``: run a stored definition with the request body as its input,
and answer when it has ended, at once, or as a stream (``runs.modes``).

- Waiting (the default): 200 with the run's document (as ``GET /v1/workflows/{id}``:
  its ``output``, or ``status: failed`` and its ``error``) once it has ended, or 202
  with its id, links and ``Location`` once ``timeout`` (seconds, query; else RFC 7240
  ``Prefer: wait=N``; at most ``HEADWATER_RUN_TIMEOUT_MAX_S``) has passed.
- ``Prefer: respond-async``: 202 at once, with ``Preference-Applied: respond-async``.
- ``Accept: text/event-stream``: an SSE stream, ``event: accepted`` (the id) then the
  run's events until its terminal one; ``Location`` names the run too.

``id`` (query) is the idempotency key, as ``id`` in ``POST /v1/workflows``: the same id
with the same input answers the same run (and waits for it again), another input 409.
``queue_anyway=true`` (query) submits even when a queue the run needs has no live
worker, as ``queue_anyway`` in ``POST /v1/workflows`` (else 400).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Header, Path, Query, Request
from pydantic import BaseModel, Field
from sse_starlette.sse import EventSourceResponse
from starlette.responses import Response

from headwater.core.priority import HIGHEST, LOWEST
from headwater.topics import WORKFLOW_ID_PATTERN
from services.gateway.auth.scope import principal, submission
from services.gateway.blobs import hrefs
from services.gateway.definitions.api import missing_name
from services.gateway.edge.body import PAYLOAD_SETTING, parse_json, read_limited, require_storable
from services.gateway.edge.problems import Problem
from services.gateway.lifetime import Runtime, accepting
from services.gateway.openapi.problems import BODY, SUBMISSION, WRITES, problems
from services.gateway.runs.claims import Accepted
from services.gateway.runs.models import CACHE_DOC, SubmitRequest
from services.gateway.runs.modes import (
    RESPOND_ASYNC,
    Mode,
    accepted_doc,
    choose_mode,
    parse_prefer,
    run_stream,
    wait_for_end,
    wait_seconds,
)
from services.gateway.runs.submit import submit

router = APIRouter()
DEFINITION_DOC: dict[str, Any] = {
    "description": "a definition's name, or name@version for one version"}
RUN_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "the run ended within the timeout: its document, as GET "
                         "/v1/workflows/{id} (output, or status failed and error)",
          "content": {"text/event-stream": {}}},
    202: {"description": "the run goes on (timed out, or Prefer: respond-async): its id, "
                         "status and links; Location names it"},
    **problems(*WRITES, *BODY, *SUBMISSION, meanings={
        400: "a task of the definition that no live worker of its queue serves",
        404: "no such definition (or version)",
        409: "the id is taken by another input",
        410: "the definition was deleted: no new runs",
        429: "a queue the run needs is full (with Retry-After)"}),
}


class RunQuery(BaseModel):
    """The query of ``POST /v1/run/{name}`` (other parameters are ignored)."""

    timeout: float | None = Field(default=None, ge=0, allow_inf_nan=False, description=(
        "seconds to wait for the end (at most HEADWATER_RUN_TIMEOUT_MAX_S)"))
    id: str | None = Field(default=None, pattern=WORKFLOW_ID_PATTERN,
                           description="the run's id (idempotency key)")
    queue_anyway: bool = Field(default=False, description=(
        "submit even when a queue the run needs has no live worker (as queue_anyway in "
        "POST /v1/workflows)"))
    priority: Annotated[int, Field(ge=LOWEST, le=HIGHEST)] | Literal[
        "low", "normal", "high"] | None = Field(default=None, description=(
            "the run's priority, 0-9 (higher first) or low, normal, high; default: the "
            "definition's (as priority in POST /v1/workflows)"))
    cache: Literal["refresh"] | None = Field(default=None, description=CACHE_DOC)
    label: list[str] = Field(default_factory=list, description=(
        "key:value: a label of the run, merged over the definition's (as labels in "
        "POST /v1/workflows); repeat for several"))


def _json(doc: Any, status: int, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json",
                    headers=headers)


def parse_input(body: bytes) -> Any:
    """The run's input: the body as JSON, or None when it is empty.

    Raises:
        Problem: 422 when the body is not JSON, or holds a value PostgreSQL or Kafka
            cannot (``edge.body.require_storable``), naming it (``input.a[3]: ...``).
    """
    if not body.strip():
        return None
    value = parse_json(body, "the body (the run's input)")
    require_storable({"input": value})
    return value


def run_labels(texts: list[str]) -> dict[str, str] | None:
    """The labels of ``?label=key:value`` parameters (checked with the spec, as a
    body's ``labels`` are); None without any.

    Raises:
        Problem: 422 naming ``query.label`` for one without a ``:`` value.
    """
    labels = {}
    for text in texts:
        key, sep, value = text.partition(":")
        if not sep:
            error = f"query.label: must be key:value, not {text[:80]!r}"
            raise Problem(422, "Invalid request", error, errors=[error])
        labels[key] = value
    return labels or None


@router.post("/v1/run/{name}", responses=RUN_RESPONSES,
             openapi_extra={"requestBody": {"required": False, "content": {
                 "application/json": {"schema": {"description": "the run's input"}}}}})
async def run_definition(
    request: Request,
    name: Annotated[str, Path(json_schema_extra=DEFINITION_DOC)],
    query: Annotated[RunQuery, Query()],
    accept: Annotated[str, Header()] = "",
    prefer: Annotated[list[str] | None, Header()] = None,
) -> Response:
    """Run definition ``name`` (``name@3``: version 3) on the body; see the module.

    Raises:
        Problem: as ``submit`` (400 a task no live worker serves, 404 unknown definition,
            409 the id is taken, 410 deleted, 422 the input does not fit the definition's
            schema, 429 a full queue, 503), 413, and 422 a body that is not JSON.
    """
    return await run_named(request, accepting(request), name, query, accept, prefer)


async def run_named(request: Request, hw: Runtime, name: str, query: RunQuery, accept: str,
                    prefer: list[str] | None) -> Response:
    """Submit a run of definition ``name`` on the request's body and answer in the mode
    the request asks (``POST /v1/run/{name}``, and ``POST <path>`` of a workflow
    served at a path: ``runs.paths``).

    Raises:
        Problem: as ``run_definition``.
    """
    body = await read_limited(request, hw.settings.max_payload_bytes, PAYLOAD_SETTING)
    workflow_input = parse_input(body)
    preferences = parse_prefer(prefer or [])
    asked = SubmitRequest(id=query.id, definition=name, input=workflow_input,
                          queue_anyway=query.queue_anyway, priority=query.priority,
                          labels=run_labels(query.label))
    me = principal(request)
    accepted = await submit(hw.pool, hw.outlet.with_cache(query.cache), submission(me, asked),
                            me, body_bytes=len(body))
    return await answer(hw, accepted, choose_mode(preferences, accept),
                        wait_seconds(query.timeout, preferences, hw.settings.run_timeout_max_s))


@router.post("/v1/run/", include_in_schema=False)
async def run_without_name() -> Response:
    """``POST /v1/run/`` (an empty name): 422 naming the missing name."""
    raise missing_name("/v1/run/{name}")


async def answer(hw: Runtime, accepted: Accepted, mode: Mode, wait_s: float) -> Response:
    """The answer to a submitted run in ``mode`` (``wait_s``: the longest wait, seconds,
    in ``Mode.SYNC``)."""
    workflow_id = accepted.workflow_id
    location = {"Location": f"/v1/workflows/{workflow_id}"}
    if mode is Mode.STREAM:
        return EventSourceResponse(run_stream(hw.pool, hw.notifier, workflow_id,
                                              accepted.status),
                                   ping=hw.settings.sse_ping_s, headers=location)
    if mode is Mode.ASYNC:
        return _json(accepted_doc(workflow_id, accepted.status, accepted.warnings), 202,
                     {**location, "Preference-Applied": RESPOND_ASYNC})
    doc = await wait_for_end(hw.pool, hw.notifier, workflow_id, wait_s,
                             lambda: hw.drain.stopping)
    if doc is None:
        status = await hw.pool.fetchval("select status from workflows where workflow_id = $1",
                                        workflow_id)
        return _json(accepted_doc(workflow_id, status or accepted.status, accepted.warnings),
                     202, location)
    return Response(hrefs.dumps(doc, workflow_id), media_type="application/json",
                    headers={"Content-Location": location["Location"]})
