"""The gateway's drain (SIGTERM): ``/ready`` and new work answer 503 at once while reads
and requests in flight go on, responses close their connections, the server stops
listening once nothing but event streams is in flight, and those then end cleanly."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import uvicorn
from gateway_harness import SPEC, FakePool, Gateway, assert_problem

from services.gateway.drain import CountRequests, Drain
from services.gateway.lifetime import Runtime
from services.gateway.runs.stream import CLOSING, Notifier, history_stream
from services.gateway.server import GatewayServer
from services.gateway.settings import Settings


def test_ready_and_new_work_answer_503_once_shutting_down(gw: Gateway) -> None:
    gw.connect(FakePool(rows={"wf": {"status": "running", "seq": 1}}))
    assert gw.client.get("/ready").status_code == 200
    gw.hw.begin_shutdown("SIGTERM")
    response = gw.client.get("/ready")
    doc = assert_problem(response, 503, "Not ready")
    assert doc["detail"] == "shutting down"
    assert response.headers["retry-after"] == "1"
    assert response.headers["connection"] == "close"
    for path, body in (("/v1/workflows", {"workflow": SPEC}), ("/v1/workflows/wf/cancel", {})):
        response = gw.client.post(path, json=body)
        assert_problem(response, 503, "Shutting down")
        assert response.headers["retry-after"] == "1"
    assert gw.client.get("/v1/workflows").status_code == 200  # reads are still served
    assert gw.client.get("/health").status_code == 200


def test_the_drain_is_over_when_nothing_is_in_flight_or_the_window_ends() -> None:
    now = [100.0]
    drain = Drain(delay_s=1.0, window_s=10.0, clock=lambda: now[0])
    assert not drain.over()
    drain.in_flight = 1
    assert drain.begin() and not drain.begin()
    now[0] += 5
    assert not drain.over()  # a request is in flight
    drain.in_flight = 0
    assert drain.over()
    drain.in_flight = 1
    now[0] += 5
    assert drain.over()  # the window is over
    idle = Drain(delay_s=1.0, window_s=10.0, clock=lambda: now[0])
    idle.begin()
    assert not idle.over()  # nothing in flight, but the delay has not passed
    now[0] += 1
    assert idle.over()


async def test_requests_are_counted_while_in_flight_and_streams_apart() -> None:
    drain = Drain()
    started, release = asyncio.Event(), asyncio.Event()
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await started.wait()
        kind = b"text/event-stream; charset=utf-8" if scope["path"] == "/s" else b"text/plain"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", kind)]})
        await release.wait()
        await send({"type": "http.response.body", "body": b""})

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    counted = CountRequests(app, drain)
    requests = [asyncio.create_task(counted({"type": "http", "path": path}, receive, send))
                for path in ("/r", "/s")]
    await asyncio.sleep(0.01)
    assert (drain.in_flight, drain.streams) == (2, 0)
    drain.begin()
    started.set()
    await asyncio.sleep(0.01)
    assert (drain.in_flight, drain.streams) == (1, 1)
    assert not drain.over()  # /r is still answering
    release.set()
    await asyncio.gather(*requests)
    assert (drain.in_flight, drain.streams) == (0, 0)
    starts = [m for m in sent if m["type"] == "http.response.start"]
    assert all((b"connection", b"close") in m["headers"] for m in starts)


async def test_an_open_event_stream_ends_cleanly_when_shutting_down() -> None:
    notifier = Notifier()
    pool = FakePool(rows={"wf": {"status": "running", "seq": 0}})
    stream = history_stream(pool, notifier, "wf", 0)  # type: ignore[arg-type]
    first = asyncio.create_task(anext(stream))
    await asyncio.sleep(0.05)
    assert not first.done()  # waiting for events
    notifier.end_streams()
    assert await asyncio.wait_for(first, 1) == CLOSING
    assert [m async for m in stream] == []


async def test_the_first_signal_drains_and_a_second_stops_at_once() -> None:
    # Open event streams do not hold the drain up: they end once the server stopped
    # listening (``GatewayServer.shutdown``).
    runtime = Runtime(Settings(), drain=Drain())
    server = GatewayServer(uvicorn.Config(app=lambda: None), runtime)
    server._loop = asyncio.get_running_loop()
    server.handle_exit(signal.SIGTERM, None)
    await asyncio.sleep(0)
    assert runtime.drain.stopping and not server.should_exit
    runtime.drain.in_flight, runtime.drain.streams = 1, 1
    assert not await server.on_tick(1)  # still answering a request
    runtime.drain.in_flight = 0
    assert await server.on_tick(2) and not server.force_exit
    server.handle_exit(signal.SIGTERM, None)
    assert server.force_exit
