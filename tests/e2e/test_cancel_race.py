"""A cancel sent right after its submission is never lost.

The submission goes to ``submissions`` and the cancel to ``control``; the coordinator
may read the cancel first. It then waits in the table for the submission
(``services/coordinator/deferred.py``) instead of being dropped as a cancel for an
unknown workflow (seen before: 27 of 50 such cancels answered 202 had no effect).
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
from stackkit import Stack, history
from test_kafka_submission import wait_status

from headwater.core import events as ev

PAIRS = 100
SPEC = {"name": "cancel-race", "nodes": [{"id": "nap", "task": "e2e.sleep",
                                           "input": {"seconds": 2}}]}


async def test_a_hundred_cancels_sent_right_after_their_submissions_all_cancel(
        stack: Stack) -> None:
    ids = [f"race-{uuid.uuid4().hex[:10]}" for _ in range(PAIRS)]
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        for workflow_id in ids:
            submitted = await client.post("/v1/workflows",
                                          json={"id": workflow_id, "workflow": SPEC})
            assert submitted.status_code == 202, submitted.text
            cancelled = await client.post(f"/v1/workflows/{workflow_id}/cancel",
                                          json={"reason": "right away"})
            assert cancelled.status_code == 202, cancelled.text
    finals = await asyncio.gather(*(wait_status(stack, w, 120) for w in ids))
    statuses = {w: f["status"] for w, f in zip(ids, finals, strict=True)}
    lost = sorted(w for w, s in statuses.items() if s != "cancelled")
    assert lost == [], f"{len(lost)} of {PAIRS} cancels had no effect: {statuses}"
    overtaken = 0
    for workflow_id in ids[:20]:  # the histories say which cancels waited
        records = await history(stack, workflow_id)
        assert records[-1].type == "WorkflowCancelled"
        overtaken += not any(isinstance(r.body, ev.TaskDispatched) for r in records)
    print(f"{overtaken} of 20 cancels overtook their submission and waited for it")
