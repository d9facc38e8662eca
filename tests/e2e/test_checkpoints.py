"""Checkpoints on the real stack: an attempt saves its progress and fails; the next
attempt is dispatched with the last checkpoint and resumes from it."""

from __future__ import annotations

import uuid

import httpx
import pytest
from stackkit import Stack, history
from test_kafka_submission import wait_status

from headwater.core import events as ev


@pytest.mark.parametrize("task", ["e2e.resume", "e2e.aresume"])
async def test_the_next_attempt_resumes_from_the_last_checkpoint(stack: Stack, task: str) -> None:
    spec = {"name": "resume", "nodes": [
        {"id": "r", "task": task, "input": {"total": 5, "crash_after": 3},
         "retry": {"max_attempts": 2, "backoff_base": 0.1}}]}
    workflow_id = f"resume-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": spec})
        assert response.status_code == 202, response.text
    status = await wait_status(stack, workflow_id)
    assert status["status"] == "succeeded", status
    assert status["output"] == {"r": {"attempt": 2, "resumed_from": 3, "processed": [3, 4]}}

    records = sorted(await history(stack, workflow_id), key=lambda r: r.seq)
    bodies = [r.body for r in records]
    saved = [(b.attempt, b.checkpoint) for b in bodies if isinstance(b, ev.TaskCheckpointed)]
    assert saved == [(1, {"done": 1}), (1, {"done": 2}), (1, {"done": 3}),
                     (2, {"done": 4}), (2, {"done": 5})]
    failed = [b for b in bodies if isinstance(b, ev.TaskFailed)]
    assert [(f.attempt, f.error) for f in failed] == [(1, "crashed after 3 items")]
    dispatched = [b for b in bodies if isinstance(b, ev.TaskDispatched)]
    assert [(d.attempt, d.checkpoint) for d in dispatched] == [(1, None), (2, {"done": 3})]
    # Every checkpoint of attempt 1 was recorded before its failure.
    last_saved = max(i for i, b in enumerate(bodies)
                     if isinstance(b, ev.TaskCheckpointed) and b.attempt == 1)
    assert last_saved < bodies.index(failed[0])
