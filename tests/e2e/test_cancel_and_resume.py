"""Cancelling over HTTP, and resuming an SSE stream at its end."""

from __future__ import annotations

import time

import httpx
from httpx_sse import aconnect_sse
from stackkit import Stack, history
from test_kafka_submission import wait_status

from headwater.core import events as ev
from tests.polling import scaled


async def test_cancel_a_running_workflow(stack: Stack) -> None:
    spec = {"name": "slow", "nodes": [{"id": "nap", "task": "e2e.sleep",
                                       "input": {"seconds": 30}},
                                      {"id": "after", "task": "e2e.sleep", "needs": ["nap"],
                                       "input": {"seconds": 0}}]}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = (await client.post("/v1/workflows", json={"workflow": spec})).json()["id"]
        await wait_status(stack, workflow_id, 30, until=("running",))
        response = await client.post(f"/v1/workflows/{workflow_id}/cancel",
                                     json={"reason": "changed my mind"})
        assert response.status_code == 202, response.text
        status = await wait_status(stack, workflow_id)
        assert status["status"] == "cancelled"
        assert status["error"] == "changed my mind"
        nodes = {n["id"]: n["status"] for n in status["nodes"]}  # type: ignore[union-attr]
        assert nodes == {"nap": "cancelled", "after": "cancelled"}

        again = await client.post(f"/v1/workflows/{workflow_id}/cancel")
        assert again.status_code == 409
        assert again.headers["content-type"] == "application/problem+json"
        unknown = await client.post("/v1/workflows/no-such-id/cancel")
        assert unknown.status_code == 404
    records = await history(stack, workflow_id)
    assert [r.type for r in records][-1] == "WorkflowCancelled"
    assert sum(isinstance(r.body, ev.TaskDispatched) for r in records) == 1


async def test_sse_resumed_at_the_terminal_event_closes_at_once(stack: Stack) -> None:
    spec = {"name": "quick", "nodes": [{"id": "a", "task": "e2e.sleep",
                                        "input": {"seconds": 0}}]}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = (await client.post("/v1/workflows", json={"workflow": spec})).json()["id"]
        final = await wait_status(stack, workflow_id)
        started = time.monotonic()
        async with aconnect_sse(client, "GET", f"/v1/workflows/{workflow_id}/events",
                                headers={"Last-Event-ID": str(final["seq"])}) as source:
            received = [sse async for sse in source.aiter_sse() if sse.data]
        assert received == []
        assert time.monotonic() - started < scaled(5)
