"""The gateway's metrics (``services/gateway/metrics.py``): requests counted by route
template and status, ``GET /metrics``, the queue gauges read from the queues' figures, and
the event streams open."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from gateway_harness import FakePool, Gateway
from prometheus_client import REGISTRY

from services.gateway import metrics
from services.gateway.queues.figures import Lag
from services.gateway.runs.stream import Notifier, history_stream


def requests(method: str, route: str, status: int) -> float:
    return REGISTRY.get_sample_value("headwater_http_requests_total", {
        "method": method, "route": route, "status": str(status)}) or 0.0


def gauge(name: str, queue: str) -> float | None:
    return REGISTRY.get_sample_value(name, {"queue": queue})


@pytest.mark.parametrize(("method", "path", "route", "status"), [
    ("GET", "/health", "/health", 200),
    ("GET", "/v1/workflows/wf-42", "/v1/workflows/{workflow_id}", 503),  # not ready
    ("GET", "/no/such/path", metrics.UNMATCHED, 404),
    ("BREW", "/health", "/health", 405),
])
def test_a_request_is_counted_by_its_route_template_and_status(
        gw: Gateway, method: str, path: str, route: str, status: int) -> None:
    label = method if method in metrics.METHODS else "other"
    before = requests(label, route, status)
    seconds = REGISTRY.get_sample_value("headwater_http_request_duration_seconds_count",
                                        {"method": label, "route": route}) or 0.0
    assert gw.client.request(method, path).status_code == status
    assert requests(label, route, status) == before + 1
    assert REGISTRY.get_sample_value("headwater_http_request_duration_seconds_count", {
        "method": label, "route": route}) == seconds + 1


def test_a_request_whose_route_raised_counts_as_a_500(gw: Gateway) -> None:
    gw.connect(FakePool(fail=RuntimeError("a bug")))
    before = requests("GET", "/v1/workflows/{workflow_id}", 500)
    assert gw.client.get("/v1/workflows/wf-1").status_code == 500
    assert requests("GET", "/v1/workflows/{workflow_id}", 500) == before + 1


def test_metrics_answers_in_prometheus_text_format_and_counts_itself(gw: Gateway) -> None:
    gw.client.get("/metrics")
    response = gw.client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    assert ('headwater_http_requests_total{method="GET",route="/metrics",status="200"}'
            in response.text)
    assert "/metrics" not in gw.client.get("/openapi.json").json()["paths"]


@dataclass
class Figures:
    """``QueueFigures`` with fixed answers; ``fail`` makes reading the lags raise."""

    lags: dict[str, Lag]
    fail: BaseException | None = None
    asked: list[str] = field(default_factory=list)

    async def task_queues(self, stale_ok: bool = False) -> set[str]:
        return set(self.lags)

    async def lag(self, queue: str, stale_ok: bool = False) -> Lag:
        self.asked.append(queue)
        if self.fail is not None:
            raise self.fail
        return self.lags[queue]


@dataclass
class Registry:
    """``WorkerRegistry`` with fixed live workers (queue, in flight)."""

    workers: list[tuple[str, int]]

    def queues(self) -> set[str]:
        return {q for q, _ in self.workers}

    def live(self, now: int | None = None) -> list[Any]:
        return [SimpleNamespace(queue=q, in_flight=n) for q, n in self.workers]


async def test_the_queue_gauges_follow_the_figures_and_drop_a_queue_gone() -> None:
    registry: Any = Registry([("unit-cpu", 2), ("unit-cpu", 3), ("unit-gpu", 0)])
    figures: Any = Figures({"unit-cpu": Lag(7, 1), "unit-gpu": Lag(0), "unit-old": Lag(1)})
    await metrics.refresh_queues(figures, registry)
    assert gauge("headwater_queue_backlog_dispatches", "unit-cpu") == 7
    assert gauge("headwater_queue_in_flight_attempts", "unit-cpu") == 5
    assert gauge("headwater_queue_live_workers", "unit-cpu") == 2
    assert (gauge("headwater_queue_oldest_waiting_seconds", "unit-cpu") or 0) > 1e9  # since 1970
    assert gauge("headwater_queue_live_workers", "unit-old") == 0  # a topic, no worker
    assert sorted(figures.asked) == ["unit-cpu", "unit-gpu", "unit-old"]
    del figures.lags["unit-old"]
    await metrics.refresh_queues(figures, registry)
    assert gauge("headwater_queue_backlog_dispatches", "unit-old") is None


async def test_figures_that_cannot_be_read_leave_the_gauges_as_they_were() -> None:
    registry: Any = Registry([("unit-slow", 1)])
    await metrics.refresh_queues(Figures({"unit-slow": Lag(4)}), registry)  # type: ignore[arg-type]
    broken: Any = Figures({"unit-slow": Lag(9)}, fail=TimeoutError("kafka"))
    await metrics.refresh_queues(broken, registry)
    assert gauge("headwater_queue_backlog_dispatches", "unit-slow") == 4


@dataclass
class EventRows:
    """A pool whose events table holds one terminal event of ``wf``."""

    read: Callable[[], Awaitable[None]]

    async def fetch(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        await self.read()
        return [{"seq": 1, "type": "WorkflowSucceeded", "data": {}}] if args[1] == 0 else []


async def test_an_event_stream_counts_as_a_subscriber_while_it_is_open() -> None:
    def open_now() -> float:
        return REGISTRY.get_sample_value("headwater_sse_subscribers") or 0.0

    before = open_now()
    seen: list[float] = []

    async def read() -> None:
        seen.append(open_now())

    pool: Any = EventRows(read)
    messages = [m async for m in history_stream(pool, Notifier(), "wf", 0)]
    assert [m["event"] for m in messages] == ["WorkflowSucceeded"]
    assert seen == [before + 1]
    assert open_now() == before
