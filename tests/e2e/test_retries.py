"""Retries through durable timers on the real broker."""

from __future__ import annotations

import uuid

import httpx
from stackkit import Stack, history
from test_kafka_submission import wait_status

from headwater.core import events as ev
from headwater.core.retry import RetryPolicy, backoff_seconds


async def test_flaky_task_succeeds_on_third_attempt_after_backoff(stack: Stack) -> None:
    retry = {"max_attempts": 4, "backoff_base": 0.3, "backoff_max": 2, "multiplier": 2,
             "jitter": 0.1}
    spec = {"name": "flaky", "nodes": [
        {"id": "f", "task": "e2e.flaky", "retry": retry, "input": {"succeed_on": 3}}]}
    workflow_id = f"flaky-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": spec})
        assert response.status_code == 202, response.text
    status = await wait_status(stack, workflow_id)
    assert status["status"] == "succeeded", status
    assert status["output"] == {"f": {"attempt": 3, "value": None}}

    records = sorted(await history(stack, workflow_id), key=lambda r: r.seq)
    dispatched = [r.body for r in records if isinstance(r.body, ev.TaskDispatched)]
    failed = [r.body for r in records if isinstance(r.body, ev.TaskFailed)]
    fired = [r.body for r in records if isinstance(r.body, ev.TimerFired)]
    assert [d.attempt for d in dispatched] == [1, 2, 3]
    assert [f.attempt for f in failed] == [1, 2]
    assert len(fired) == 2
    policy = RetryPolicy(4, 0.3, 2.0, 2.0, 0.1)
    for fail, nxt in zip(failed, dispatched[1:], strict=True):
        delay_ms = backoff_seconds(policy, fail.attempt, f"{workflow_id}/f/{fail.attempt}") * 1000
        waited = nxt.at_ms - fail.at_ms
        assert delay_ms - 1 <= waited <= delay_ms + 2000, (fail.attempt, waited, delay_ms)


async def test_non_retryable_error_fails_at_once(stack: Stack) -> None:
    spec = {"name": "fatal", "retry": {"max_attempts": 5},
            "nodes": [{"id": "x", "task": "e2e.fatal"},
                      {"id": "after", "task": "e2e.flaky", "needs": ["x"],
                       "input": {"succeed_on": 1}}]}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.post("/v1/workflows", json={"workflow": spec})
        workflow_id = response.json()["id"]
    status = await wait_status(stack, workflow_id)
    assert status["status"] == "failed"
    assert "this input can never work" in str(status["error"])
    nodes = {n["id"]: n["status"] for n in status["nodes"]}  # type: ignore[union-attr]
    assert nodes == {"x": "failed", "after": "upstream_failed"}
    records = await history(stack, workflow_id)
    assert sum(isinstance(r.body, ev.TaskDispatched) for r in records) == 1
