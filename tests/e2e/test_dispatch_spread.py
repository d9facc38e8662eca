"""One workflow's tasks spread over every worker of their queue.

Dispatches are keyed by their dispatch id, not by the workflow id, so the items of one
map land on every partition of the queue's topic and so on every worker of its consumer
group (keyed by workflow id, all of a map's items went to one partition: one worker ran
them however many the queue had).
"""

from __future__ import annotations

import uuid

import httpx
from consumer_groups import wait_group_size
from stackkit import TASKS, Stack, history
from test_kafka_submission import wait_status

from headwater.core import events as ev
from ops import localstack

ITEMS = 48


async def test_a_maps_items_run_on_both_workers_of_the_queue(own: Stack) -> None:
    second = localstack.default_services(TASKS, workers=2)[-1]
    own.start(second)
    try:
        await wait_group_size(own.topics.worker_group("cpu"), 2, "two cpu workers", 30,
                              stable=True)
        spec = {"name": "spread", "nodes": [{
            "id": "m", "kind": "map", "over": "${input.xs}", "task": "e2e.sleep",
            "input": {"seconds": 0.2}}]}
        workflow_id = f"spread-{uuid.uuid4().hex[:8]}"
        async with httpx.AsyncClient(base_url=own.gateway, timeout=30) as client:
            response = await client.post("/v1/workflows", json={
                "id": workflow_id, "workflow": spec, "input": {"xs": list(range(ITEMS))}})
            assert response.status_code == 202, response.text
        assert (await wait_status(own, workflow_id, 120))["status"] == "succeeded"
        records = await history(own, workflow_id)
        workers = {r.body.worker for r in records if isinstance(r.body, ev.TaskStarted)}
        per_worker = {w: sum(isinstance(r.body, ev.TaskStarted) and r.body.worker == w
                             for r in records) for w in workers}
        assert len(workers) == 2, f"the {ITEMS} items ran on {per_worker}"
    finally:
        own.stop(second)
        own.services.remove(second)
