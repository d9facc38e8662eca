"""Liveness and readiness probes."""

from __future__ import annotations

import asyncio
import os

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from services.common.kafka.client import BrokerUnreachable
from services.gateway.edge.problems import DATABASE_UNAVAILABLE, NOT_READY, RETRY_AFTER_S, Problem
from services.gateway.lifetime import Runtime, runtime
from services.gateway.openapi.problems import problems

router = APIRouter()


def _ok(status: str, **extra: object) -> Response:
    return Response(orjson.dumps({"status": status, **extra}), media_type="application/json")


HEALTH_SCHEMA = {"type": "object", "required": ["status", "pid"], "properties": {
    "status": {"const": "ok"},
    "pid": {"type": "integer", "description": "the answering gateway process's pid: "
                                              "`headwater up` checks that it is the "
                                              "process it started"}}}


@router.get("/health", responses={200: {
    "description": "alive", "content": {"application/json": {
        "schema": HEALTH_SCHEMA, "example": {"status": "ok", "pid": 4242}}}}})
async def health() -> Response:
    """Liveness: the process answers, with its ``pid`` (which process holds the port)."""
    return _ok("ok", pid=os.getpid())


@router.get("/ready", responses=problems(NOT_READY))
async def ready(request: Request) -> Response:
    """Readiness: 503 until connected, while PostgreSQL or Kafka does not answer in
    time, and from SIGTERM on ("shutting down").

    PostgreSQL must answer ``select 1`` and a Kafka broker a metadata request
    (``services.common.kafka.broker_answers``), both within the ``ready_timeout_s``
    setting; the two are asked at once, so the probe takes at most that long. The
    detail names each one that did not answer.
    """
    if request.app.state.hw.drain.stopping:
        raise Problem(503, "Not ready", "shutting down", headers={"Retry-After": RETRY_AFTER_S})
    hw = runtime(request)
    faults = [f for f in await asyncio.gather(_database_fault(hw), _kafka_fault(hw)) if f]
    if faults:
        raise Problem(503, "Not ready", "; ".join(faults),
                      headers={"Retry-After": RETRY_AFTER_S})
    return _ok("ready")


async def _database_fault(hw: Runtime) -> str:
    """Why PostgreSQL is not ready (``""``: it answered)."""
    try:
        await asyncio.wait_for(hw.pool.fetchval("select 1"), hw.settings.ready_timeout_s)
    except DATABASE_UNAVAILABLE as e:  # TimeoutError is an OSError
        return f"PostgreSQL does not answer: {type(e).__name__}"
    return ""


async def _kafka_fault(hw: Runtime) -> str:
    """Why Kafka is not ready (``""``: a broker answered, or no check is set)."""
    if hw.broker_check is None:
        return ""
    try:
        await hw.broker_check(hw.settings.ready_timeout_s)
    except BrokerUnreachable as e:
        return f"Kafka unreachable: {e}"
    return ""
