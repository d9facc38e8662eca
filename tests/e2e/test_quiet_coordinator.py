"""A coordinator that was idle for longer than its stall limit takes a burst in stride.

The stall check restarts a coordinator when a record has waited 30 s in an input
partition with none applied (a record lost on its way to the stream). It once measured
the time since the partition last moved instead, so the first records after a quiet
spell looked stalled at once and the coordinator restarted itself whenever work came
back ("offsets 399..399 are in the log but none came for 45 s").
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
from stackkit import Stack
from test_kafka_submission import wait_status

QUIET_S = 60.0
"""Longer than the stall limit (``services/coordinator/app.py``, 30 s): the scenario
itself, not a wait for a condition, so it is not scaled."""
SPEC = {"name": "burst", "nodes": [{"id": "a", "task": "e2e.sleep", "input": {"seconds": 0}},
                                    {"id": "b", "task": "e2e.sleep", "needs": ["a"],
                                     "input": {"seconds": 0}}]}


async def _run(stack: Stack, client: httpx.AsyncClient, count: int) -> None:
    ids = [f"burst-{uuid.uuid4().hex[:8]}" for _ in range(count)]
    for workflow_id in ids:
        response = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": SPEC})
        assert response.status_code == 202, response.text
    finals = await asyncio.gather(*(wait_status(stack, w, 120) for w in ids))
    assert [f["status"] for f in finals] == ["succeeded"] * count


async def test_a_burst_after_a_quiet_minute_does_not_restart_the_coordinator(
        own: Stack) -> None:
    log_file = own.home / "logs" / "coordinator.log"  # the stack's own home, not the session's
    async with httpx.AsyncClient(base_url=own.gateway, timeout=30) as client:
        await _run(own, client, 3)
        mark = len(log_file.read_text(errors="replace"))
        await asyncio.sleep(QUIET_S)
        await _run(own, client, 40)
    after = log_file.read_text(errors="replace")[mark:]
    assert "restarting" not in after, after[-3000:]
