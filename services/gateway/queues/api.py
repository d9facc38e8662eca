"""``GET /v1/queues``: every queue's backlog, work in flight, live workers and state
(``queues.figures``)."""

from __future__ import annotations

import logging
from typing import Any

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from services.gateway.auth.scope import principal
from services.gateway.edge.problems import KAFKA_UNAVAILABLE, NOT_READY, RETRY_AFTER_S, Problem
from services.gateway.lifetime import runtime
from services.gateway.limits.api import read_limits
from services.gateway.openapi.problems import problems
from services.gateway.queues.figures import overview
from services.gateway.triggers.api import queue_section

router = APIRouter()
log = logging.getLogger(__name__)

QUEUES_EXAMPLE = {"queues": [{
    "queue": "gpu", "backlog": 3, "in_flight": 2, "live_workers": 1,
    "workers": [{"worker_id": "host-1-4242", "host": "host-1", "pid": 4242,
                 "version": "0.1.0", "tasks": ["embed"], "tags": ["a100", "gpu"],
                 "concurrency": 2, "in_flight": 2,
                 "started_at_ms": 1722000000000, "announced_s_ago": 1.2}],
    "lost_workers": [{"worker_id": "host-2-77", "host": "host-2", "pid": 77, "in_flight": 4,
                      "last_heard_at": "2024-07-26T13:20:00.500000+00:00"}],
    "tasks": ["embed"], "tags": ["a100", "gpu"],
    "selectors": [{"requires": ["a100"], "topic": "headwater.needs.gpu.a100", "backlog": 1}],
    "backlog_by_priority": {"8": 1, "5": 2},
    "oldest_waiting_s": 4.5, "maxdepth": 100, "state": "ok"}],
    "limits": [{"limiter": "limit::concurrency:acme", "kind": "concurrency", "key": "acme",
                "limit": 2, "window_s": None, "holding": 2, "queued": 3, "granted": 41,
                "updated_at": "2026-03-02T01:00:00.004000+00:00"}],
    "triggers": [{"trigger": "-/orders", "name": "orders", "tenant": None,
                  "topic": "shop.orders", "group": "headwater-trigger---orders", "lag": 2,
                  "partitions": [{"partition": 0, "end": 120, "committed": 118, "lag": 2}]}]}


@router.get("/v1/queues", responses={
    200: {"description": "every known queue (a worker announced it, or its tasks topic "
                         "exists), by name",
          "content": {"application/json": {"example": QUEUES_EXAMPLE}}},
    **problems(NOT_READY, KAFKA_UNAVAILABLE)})
async def get_queues(request: Request) -> Response:
    """Per queue: ``backlog`` (its workers' consumer group lag: dispatches not taken yet),
    ``in_flight`` (attempts its live workers run), ``live_workers`` and ``workers``
    (announced within 3 of their intervals, not stopping), ``tasks`` (served by them),
    ``tags`` (announced by them), ``selectors`` (the selector topics of nodes that
    require tags: the tags and the topic's backlog, counted in ``backlog``),
    ``backlog_by_priority`` (``backlog`` per priority of the runs waiting, highest
    first, ``{"8": 1, "5": 2}``; bands without backlog left out),
    ``oldest_waiting_s`` (age of the oldest dispatch not taken yet, seconds, or null),
    ``lost_workers`` (stopped announcing without a stopping record, SIGKILLed: heard
    within ``HEADWATER_UNSERVED_AFTER_S``, with their last ``in_flight``),
    ``maxdepth`` (0: unlimited) and ``state``: ``ok``, ``no_live_workers`` or ``full``
    (backlog at or over maxdepth: submissions needing it get 429). Beside the queues,
    ``limits``: the limiters of concurrency keys and rate limits, as ``GET /v1/limits``
    lists them (null when the projection cannot be read); ``triggers``: each trigger's
    consumer group lag per partition (``triggers.lag``; null when Kafka cannot be read)."""
    hw = runtime(request)
    if hw.workers is None or hw.queue_figures is None:
        raise Problem(503, "Not ready", "still connecting to Kafka",
                      headers={"Retry-After": RETRY_AFTER_S})
    try:
        queues = await overview(hw.queue_figures, hw.workers, dict(hw.settings.queue_maxdepth))
    except Exception as e:
        raise Problem(503, "Kafka unavailable", f"the queues' figures could not be read: {e!r}",
                      headers={"Retry-After": RETRY_AFTER_S}) from e
    return Response(orjson.dumps({"queues": queues, "limits": await _limits(request),
                                  "triggers": await queue_section(hw, principal(request))}),
                    media_type="application/json")


async def _limits(request: Request) -> list[dict[str, Any]] | None:
    """The limiters (``GET /v1/limits``' first page: a tenant's principal sees none), or
    None when the projection cannot be read (the queues' figures are Kafka's)."""
    if not principal(request).every_tenant:
        return []
    try:
        items: list[dict[str, Any]] = (await read_limits(runtime(request).pool, 500,
                                                         None))["items"]
    except Exception:  # PostgreSQL down or not connected yet: the queues still answer
        log.warning("GET /v1/queues: the limiters could not be read", exc_info=True)
        return None
    return items
