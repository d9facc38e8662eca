"""``restart_on_failure`` on the real stack: a worker SIGKILLed mid-attempt makes the
coordinator restart the whole run as generation 2 (its history going on), instead of
retrying the lost task; the run then succeeds with the new generation's outputs, and
the run's document says which generation it is."""

from __future__ import annotations

import os
import signal
import uuid
from typing import Any

import httpx
from consumer_groups import wait_group_size
from stackkit import TASKS, Stack, history
from test_kafka_submission import wait_status
from test_leases import reports_of, started, worker_services
from test_worker_faults import wait_all_committed

from headwater.client import AsyncClient
from headwater.core import events as ev
from ops import localstack
from tests.polling import wait_until_async

SPEC: dict[str, Any] = {
    "name": "restart", "restart_on_failure": True, "max_restarts": 2,
    "nodes": [
        {"id": "a", "task": "e2e.digest", "input": {"value": "${input.seed}", "salt": "a"}},
        {"id": "h", "task": "e2e.hang_first", "needs": ["a"], "input": {"seconds": 300},
         "heartbeat_timeout": 2, "retry": {"max_attempts": 3, "backoff_base": 0.1}},
    ],
    "output": {"a": "${nodes.a.output}", "h": "${nodes.h.output}"},
}


async def test_a_lost_worker_restarts_the_whole_run(stack: Stack) -> None:
    second = localstack.default_services(TASKS, workers=2)[-1]
    assert second not in stack.services
    stack.start(second)
    killed: localstack.Service | None = None
    try:
        await wait_group_size(stack.topics.worker_group("cpu"), 2, "two cpu workers", 30,
                              stable=True)
        workflow_id = f"restart-{uuid.uuid4().hex[:8]}"
        async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
            response = await client.post("/v1/workflows", json={
                "id": workflow_id, "workflow": SPEC, "input": {"seed": "s"}})
            assert response.status_code == 202, response.text

        def beating(reports: list[Any]) -> bool:
            return any(isinstance(r, ev.TaskStarted) and r.node == "h" for r in reports)

        reports = await reports_of(stack, workflow_id, beating)
        first_worker = next(r.worker for r in started(reports, 1) if r.node == "h")
        pid = int(first_worker.rsplit("-", 1)[1])
        live = worker_services(stack)
        assert pid in live, (first_worker, live)
        await wait_all_committed(stack, timeout_s=10)
        killed = live[pid]
        os.kill(pid, signal.SIGKILL)  # one of the stack's own workers, by its pid

        status = await wait_status(stack, workflow_id, timeout_s=120)
        assert status["status"] == "succeeded", status
        assert status["output"]["h"] == {"attempt": 2}, status  # generation 2's attempt
        records = sorted(await history(stack, workflow_id), key=lambda r: r.seq)
        bodies = [r.body for r in records]
        restarts = [b for b in bodies if isinstance(b, ev.WorkflowRestarted)]
        assert [(r.generation, r.attempt_floor, r.dropped) for r in restarts] == [
            (2, 1, {"a": 1, "h": 1})], restarts
        assert "h attempt 1 was lost" in restarts[0].reason, restarts[0].reason
        assert [(d.node, d.attempt) for d in bodies if isinstance(d, ev.TaskDispatched)] == [
            ("a", 1), ("h", 1), ("a", 2), ("h", 2)]
        assert not [b for b in bodies if isinstance(b, ev.TaskFailed)], bodies
        cancelled = [(b.node, b.attempt) for b in bodies if isinstance(b, ev.TaskCancelled)]
        assert cancelled == [("h", 1)]
        succeeded = [(b.node, b.attempt) for b in bodies if isinstance(b, ev.TaskSucceeded)]
        assert succeeded == [("a", 1), ("a", 2), ("h", 2)]

        async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
            async def projected() -> dict[str, Any] | None:
                doc = (await client.get(f"/v1/workflows/{workflow_id}")).json()
                return doc if doc.get("generation") == 2 else None
            doc = await wait_until_async(projected, timeout_s=30,
                                         what="generation 2 projected")
            tasks = {t["key"]: t["attempt"] for t in doc["tasks"]}
            assert tasks == {"a": 2, "h": 2}, doc["tasks"]
        async with AsyncClient(stack.gateway) as hw:
            assert (await hw.get(workflow_id)).generation == 2
    finally:
        if killed is not None and killed is not second:
            stack.start(killed)  # restarts it (its pid file names a dead process)
        stack.stop(second)
        stack.services.remove(second)
