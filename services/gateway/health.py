"""Liveness and readiness probes."""

from __future__ import annotations

import asyncio

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from services.gateway.problems import DATABASE_UNAVAILABLE, RETRY_AFTER_S, Problem
from services.gateway.runtime import runtime

router = APIRouter()


def _ok(status: str) -> Response:
    return Response(orjson.dumps({"status": status}), media_type="application/json")


@router.get("/health")
async def health() -> Response:
    """Liveness: the process answers."""
    return _ok("ok")


@router.get("/ready")
async def ready(request: Request) -> Response:
    """Readiness: 503 until connected, while PostgreSQL does not answer in time, and
    from SIGTERM on ("shutting down").

    PostgreSQL must answer ``select 1`` within the ``ready_timeout_s`` setting.
    """
    if request.app.state.hw.drain.stopping:
        raise Problem(503, "Not ready", "shutting down", headers={"Retry-After": RETRY_AFTER_S})
    hw = runtime(request)
    try:
        await asyncio.wait_for(hw.pool.fetchval("select 1"), hw.settings.ready_timeout_s)
    except DATABASE_UNAVAILABLE as e:  # TimeoutError is an OSError
        raise Problem(503, "Not ready", f"PostgreSQL does not answer: {type(e).__name__}",
                      headers={"Retry-After": RETRY_AFTER_S}) from e
    return _ok("ready")
