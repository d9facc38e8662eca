"""``POST /v1/run/{name}`` on the real stack: waiting for the output, waiting past the
timeout into 202, the event stream, and ``Prefer: respond-async``; what a run request
cannot carry, ``queue_anyway`` and ``Accept`` weights; and the wait itself
(``runs.modes.wait_for_end``), woken by the projector's ``NOTIFY``."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import orjson
import pytest
from httpx_sse import aconnect_sse
from stackkit import Stack

from services.common.db import connect_pool
from services.gateway.runs import modes
from services.gateway.runs.modes import wait_for_end
from services.gateway.runs.stream import Notifier
from tests.polling import scaled, wait_until_async

SLEEPY: dict[str, Any] = {"name": "sleepy", "nodes": [
    {"id": "s", "task": "e2e.sleep", "input": {"seconds": "${input.seconds}"}}],
    "output": "${nodes.s.output}"}
FATAL: dict[str, Any] = {"name": "fatal", "nodes": [{"id": "f", "task": "e2e.fatal"}]}


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


async def test_the_wait_rides_on_notifications(stack: Stack,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(modes, "RECHECK_S", 60.0)  # only a notification wakes it soon
    pool = await connect_pool(stack.dsn, max_size=2)
    notifier = Notifier()
    await notifier.start(stack.dsn)
    try:
        async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
            ids = []
            for seconds in (0.5, 30):
                response = await client.post("/v1/workflows", json={
                    "id": unique("wait"), "workflow": SLEEPY, "input": {"seconds": seconds}})
                assert response.status_code == 202, response.text
                ids.append(response.json()["id"])
        began = time.monotonic()
        doc = await wait_for_end(pool, notifier, ids[0], 60)
        assert doc is not None and doc["status"] == "succeeded" and doc["output"] == 0.5
        assert time.monotonic() - began < scaled(20)  # woken, not re-read after 60 s
        assert await wait_for_end(pool, notifier, ids[1], 0.5) is None
    finally:
        await notifier.stop()
        await pool.close()


async def test_the_three_modes(stack: Stack) -> None:
    sleepy, fatal = unique("sleepy"), unique("fatal")
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=60) as client:
        for name, spec in ((sleepy, SLEEPY), (fatal, FATAL)):
            put = await client.put(f"/v1/definitions/{name}", json={"workflow": spec})
            assert put.status_code == 201, put.text

        done = await client.post(f"/v1/run/{sleepy}?timeout=30", json={"seconds": 0.2})
        assert done.status_code == 200, done.text
        assert done.json()["status"] == "succeeded" and done.json()["output"] == 0.2
        assert done.json()["definition"] == {"name": sleepy, "version": 1}
        failed = await client.post(f"/v1/run/{fatal}")
        assert failed.status_code == 200 and failed.json()["status"] == "failed"
        assert "this input can never work" in failed.json()["error"]

        began = time.monotonic()
        later = await client.post(f"/v1/run/{sleepy}?timeout=0.5", json={"seconds": 20})
        assert later.status_code == 202, later.text
        assert time.monotonic() - began < 10
        assert later.headers["location"] == f"/v1/workflows/{later.json()['id']}"

        run_id = unique("async")
        at_once = await client.post(f"/v1/run/{sleepy}?id={run_id}", json={"seconds": 20},
                                    headers={"Prefer": "respond-async"})
        assert at_once.status_code == 202 and at_once.json()["id"] == run_id
        assert at_once.headers["preference-applied"] == "respond-async"
        again = await client.post(f"/v1/run/{sleepy}?id={run_id}", json={"seconds": 21},
                                  headers={"Prefer": "respond-async"})
        assert again.status_code == 409  # the id is taken by another input

        messages = []
        async with aconnect_sse(client, "POST", f"/v1/run/{sleepy}", json={"seconds": 0.2},
                                headers={"Accept": "text/event-stream"}) as source:
            assert source.response.status_code == 200
            location = source.response.headers["location"]
            messages = [(m.id, m.event, m.data) async for m in source.aiter_sse()]
    assert messages[0][1] == "accepted" and not messages[0][0]
    streamed_id = orjson.loads(messages[0][2])["id"]
    assert location == f"/v1/workflows/{streamed_id}"
    assert [int(m[0]) for m in messages[1:]] == list(range(1, len(messages)))
    assert messages[1][1] == "WorkflowAccepted" and messages[-1][1] == "WorkflowSucceeded"
    unknown = httpx.post(f"{stack.gateway}/v1/run/{unique('nothing')}", json={})
    assert unknown.status_code == 404


async def test_what_a_run_request_cannot_carry_and_how_it_asks(stack: Stack) -> None:
    """On the real gateway: an input integer beyond 64 bits is 422 naming it (not a
    float), ``queue_anyway`` lets a run whose task no live worker serves be queued,
    ``Accept`` weights are read (``q=0`` is not the stream), and an empty name is a
    problem naming it."""
    name, unserved = unique("sleepy"), unique("unserved")
    nobody = {"name": "unserved", "nodes": [{"id": "u", "task": "e2e.nobody-serves-this",
                                             "queue": f"q-{unserved}"}]}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=60) as client:
        for ref, spec in ((name, SLEEPY), (unserved, nobody)):
            put = await client.put(f"/v1/definitions/{ref}", json={"workflow": spec})
            assert put.status_code == 201, put.text
        huge = await client.post(f"/v1/run/{name}", content=b"12345678901234567890123")
        assert huge.status_code == 422, huge.text
        assert huge.json()["errors"] == ["input: integer outside the signed 64-bit range"]

        await wait_until_async(  # admitted anyway while the gateway's start-up grace lasts
            lambda: client.post(f"/v1/run/{unserved}", headers={"Prefer": "respond-async"}),
            60, "a run no live worker serves refused", until=lambda r: r.status_code == 400)
        queued = await client.post(f"/v1/run/{unserved}?queue_anyway=true",
                                   headers={"Prefer": "respond-async"})
        assert queued.status_code == 202, queued.text

        for accept in ("text/event-stream;q=0", "application/json, text/event-stream;q=0.1"):
            answer = await client.post(f"/v1/run/{name}?timeout=30", json={"seconds": 0.1},
                                       headers={"Accept": accept})
            assert answer.status_code == 200, (accept, answer.text)
            assert answer.headers["content-type"] == "application/json"

        empty = await client.put("/v1/definitions/", json={"workflow": SLEEPY})
        assert empty.status_code == 422 and "name" in empty.json()["detail"], empty.text
