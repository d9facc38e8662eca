"""The gateway's Prometheus metrics and its ``GET /metrics``: HTTP requests by route
template and status (``HTTPMetrics``, an ASGI middleware), event streams open, and the
queues' figures that ``GET /v1/queues`` shows (``queues.figures``), read again at each scrape.

The gateway serves its metrics on its own HTTP port, beside the API, and leaves the
route out of the OpenAPI document. A request's route is the template it matched
(``/v1/workflows/{workflow_id}``, never the path itself: the label stays bounded), or
``unmatched``; its method one of ``METHODS`` or ``other``.
"""

from __future__ import annotations

import asyncio
import logging
import time

from fastapi import APIRouter, FastAPI, Request
from prometheus_client import Counter, Gauge, Histogram
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.common.clock import now_ms
from services.common.metrics import LATENCY_BUCKETS_S, exposition
from services.gateway.queues.figures import Lag, QueueFigures
from services.gateway.queues.workers import WorkerRegistry
from services.gateway.triggers import lag as triggers_lag

log = logging.getLogger("headwater.gateway")

router = APIRouter(include_in_schema=False)

METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
"""The methods a request is counted under; any other counts as ``other``."""
UNMATCHED = "unmatched"
"""The route of a request that matched none (a 404)."""
QUEUES_READ_S = 3.0
"""How long a scrape waits for the queues' figures, seconds; past it (Kafka
unreachable) the gauges keep their last values."""

REQUESTS = Counter("headwater_http_requests_total", "HTTP requests answered by the "
                   "gateway, by method, route template and status.",
                   ["method", "route", "status"])
REQUEST_SECONDS = Histogram(
    "headwater_http_request_duration_seconds", "Seconds from a request's arrival to its "
    "response's headers (an event stream's first byte), by method and route template.",
    ["method", "route"], buckets=LATENCY_BUCKETS_S)
SSE_SUBSCRIBERS = Gauge("headwater_sse_subscribers",
                        "Event streams (GET /v1/workflows/{id}/events) open.")
BACKLOG = Gauge("headwater_queue_backlog_dispatches", "Dispatches on a queue not taken yet: "
                "the lag of its workers' consumer group on <prefix>.tasks.<queue>.", ["queue"])
IN_FLIGHT = Gauge("headwater_queue_in_flight_attempts",
                  "Attempts a queue's live workers run (from their announcements).", ["queue"])
LIVE_WORKERS = Gauge("headwater_queue_live_workers", "A queue's live workers.", ["queue"])
OLDEST_WAITING = Gauge("headwater_queue_oldest_waiting_seconds", "Age of a queue's oldest "
                       "dispatch not taken yet, seconds (0 without backlog).", ["queue"])
_QUEUE_GAUGES = (BACKLOG, IN_FLIGHT, LIVE_WORKERS, OLDEST_WAITING)
_shown: set[str] = set()
"""The queues the gauges hold values for."""


def install(app: FastAPI) -> FastAPI:
    """Add ``GET /metrics`` to ``app`` and count its requests (``HTTPMetrics``, inside
    any middleware added later: a request a later one answers itself, a CORS preflight
    say, is not counted; one whose route raised counts as 500). Returns ``app``."""
    app.add_middleware(HTTPMetrics)
    app.include_router(router)
    return app


class HTTPMetrics:
    """ASGI middleware counting each HTTP request by method, route template and status,
    and timing it to its response's headers. A request whose application raised before
    answering counts as 500.

    Args:
        app: the application.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the request, counting it."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began_s = time.perf_counter()
        method = scope["method"] if scope["method"] in METHODS else "other"
        status = 500

        async def observing_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                REQUEST_SECONDS.labels(method, route_of(scope)).observe(
                    time.perf_counter() - began_s)
            await send(message)

        try:
            await self.app(scope, receive, observing_send)
        finally:
            REQUESTS.labels(method, route_of(scope), str(status)).inc()


def route_of(scope: Scope) -> str:
    """The template of the route a request matched (set in ``scope["route"]`` by the
    router), or ``UNMATCHED``."""
    path = getattr(scope.get("route"), "path", None)
    return path if isinstance(path, str) and path else UNMATCHED


@router.get("/metrics")
async def get_metrics(request: Request) -> Response:
    """The gateway's metrics, in Prometheus' text format; the queues' figures and the
    triggers' lag are read first (``refresh_queues``, ``triggers.lag.refresh``)."""
    hw = request.app.state.hw
    if hw.ready and hw.workers is not None and hw.queue_figures is not None:
        await refresh_queues(hw.queue_figures, hw.workers)
    if hw.ready and hw.triggers is not None and hw.queue_figures is not None:
        await triggers_lag.refresh(hw.triggers.all_live(), hw.queue_figures.offsets,
                                   hw.settings.topics)
    body, content_type = exposition()
    return Response(body, media_type=content_type)


async def refresh_queues(figures: QueueFigures, registry: WorkerRegistry,
                         timeout_s: float = QUEUES_READ_S) -> None:
    """Set the queue gauges to every known queue's figures (``queues.figures.QueueFigures``: the
    backlogs ``GET /v1/queues`` and admission share, at most ``CACHE_S`` old), and drop
    the queues no longer known. Kafka not answering within ``timeout_s`` leaves them
    as they were (logged)."""
    try:
        names, lags = await asyncio.wait_for(_read(figures, registry), timeout_s)
    except Exception as e:  # the scrape must answer: the other metrics still count
        log.warning("metrics: the queues' figures could not be read: %r", e)
        return
    now = now_ms()
    live = registry.live(now)
    for queue, lag in zip(names, lags, strict=True):
        workers = [w for w in live if w.queue == queue]
        BACKLOG.labels(queue).set(lag.backlog)
        IN_FLIGHT.labels(queue).set(sum(w.in_flight for w in workers))
        LIVE_WORKERS.labels(queue).set(len(workers))
        OLDEST_WAITING.labels(queue).set(
            0 if lag.oldest_ms is None else max(0, now - lag.oldest_ms) / 1000)
    for gone in _shown - set(names):
        for gauge in _QUEUE_GAUGES:
            gauge.remove(gone)
    _shown.clear()
    _shown.update(names)


MAX_UNANNOUNCED_QUEUES = 50
"""The most queues no worker announced that get series: any client can make a tasks
topic (``queue_anyway``, a record on the submissions topic, which the broker's topic
auto-creation follows), so such a queue is shown only while dispatches wait on it, the
longest backlogs first, and the label values stay bounded."""


async def _read(figures: QueueFigures, registry: WorkerRegistry,
                ) -> tuple[list[str], list[Lag]]:
    """The queues shown, sorted, and their lags: every queue workers announced, and up to
    ``MAX_UNANNOUNCED_QUEUES`` others whose tasks topic has a backlog."""
    announced = registry.queues()
    names = sorted(announced | await figures.task_queues(stale_ok=True))
    lags = dict(zip(names, await asyncio.gather(*(figures.lag(q) for q in names)),
                    strict=True))
    waiting = sorted((q for q in names if q not in announced and lags[q].backlog > 0),
                     key=lambda q: -lags[q].backlog)[:MAX_UNANNOUNCED_QUEUES]
    shown = sorted(announced | set(waiting))
    return shown, [lags[q] for q in shown]
