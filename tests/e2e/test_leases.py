"""The lease model on the real broker: a worker killed mid-attempt (SIGKILL) does not get
its dispatch delivered again by Kafka; the coordinator notices the missing heartbeats,
fails the attempt (``HeartbeatTimeout``) and another worker runs the next one."""

from __future__ import annotations

import os
import signal
import time
import uuid
from typing import Any

import httpx
from consumer_groups import wait_group_size
from stackkit import TASKS, Stack, history, read_topic
from test_kafka_submission import wait_status
from test_worker_faults import wait_all_committed

from headwater import codec
from headwater.core import events as ev
from ops import localstack
from tests.polling import scaled


def worker_services(stack: Stack) -> dict[int, localstack.Service]:
    """The stack's live workers, by pid."""
    live = {}
    for service in stack.services:
        pid = localstack.read_pid(service.pid_file)
        if service.name.startswith("worker-") and pid is not None:
            live[pid] = service
    return live


async def reports_of(stack: Stack, workflow_id: str, enough: Any,
                     timeout_s: float = 60.0) -> list[Any]:
    """The workflow's reports on the reports topic, once ``enough(reports)`` holds (other
    tests leave undecodable records there: only this workflow's, by key, are decoded);
    ``timeout_s`` is scaled (``tests/polling.py``)."""
    key = workflow_id.encode()

    def mine(records: list[Any]) -> list[Any]:
        return [codec.decode(r.value) for r in records if r.key == key]

    records = await read_topic(stack.topics.reports, lambda rs: enough(mine(rs)),
                               scaled(timeout_s), decode=False)
    return mine(records)


def started(reports: list[Any], attempt: int) -> list[ev.TaskStarted]:
    return [r for r in reports if isinstance(r, ev.TaskStarted) and r.attempt == attempt]


async def test_a_killed_workers_attempt_is_retried_on_another_worker(stack: Stack) -> None:
    second = localstack.default_services(TASKS, workers=2)[-1]
    assert second.name == "worker-cpu-2" and second not in stack.services
    stack.start(second)
    killed: localstack.Service | None = None
    try:
        await wait_group_size(stack.topics.worker_group("cpu"), 2, "two cpu workers", 30,
                              stable=True)
        assert len(worker_services(stack)) == 2, stack.logs()
        spec = {"name": "lease", "nodes": [{
            "id": "h", "task": "e2e.hang_first", "input": {"seconds": 300},
            "heartbeat_timeout": 2, "retry": {"max_attempts": 3, "backoff_base": 0.1}}]}
        workflow_id = f"lease-{uuid.uuid4().hex[:8]}"
        async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
            response = await client.post("/v1/workflows",
                                         json={"id": workflow_id, "workflow": spec})
            assert response.status_code == 202, response.text

        # Attempt 1 runs, its thread blocked in time.sleep, and still heartbeats.
        def beating(reports: list[Any]) -> bool:
            return started(reports, 1) != [] and sum(
                isinstance(r, ev.TaskHeartbeated) and r.attempt == 1 for r in reports) >= 2

        reports = await reports_of(stack, workflow_id, beating)
        first_worker = started(reports, 1)[0].worker
        pid = int(first_worker.rsplit("-", 1)[1])
        live = worker_services(stack)
        assert pid in live, (first_worker, live)
        # Committed at start: nothing of tasks.cpu is left uncommitted, though it runs.
        await wait_all_committed(stack, timeout_s=10)

        killed = live[pid]
        os.kill(pid, signal.SIGKILL)  # one of the stack's own workers, by its pid
        killed_at = time.monotonic()
        status = await wait_status(stack, workflow_id, timeout_s=120)
        assert status["status"] == "succeeded", status
        assert status["output"] == {"h": {"attempt": 2}}
        assert time.monotonic() - killed_at < scaled(60)

        records = sorted(await history(stack, workflow_id), key=lambda r: r.seq)
        failed = [r.body for r in records if isinstance(r.body, ev.TaskFailed)]
        assert [(f.attempt, f.error_type, f.retryable) for f in failed] == [
            (1, "HeartbeatTimeout", True)]
        succeeded = [r.body for r in records if isinstance(r.body, ev.TaskSucceeded)]
        assert [s.attempt for s in succeeded] == [2]
        dispatched = [r.body for r in records if isinstance(r.body, ev.TaskDispatched)]
        assert [d.attempt for d in dispatched] == [1, 2]
        starts = [r.body for r in records if isinstance(r.body, ev.TaskStarted)]
        assert (starts[0].attempt, starts[0].worker) == (1, first_worker)
        other = [s.worker for s in starts if s.attempt == 2]
        assert len(other) == 1 and other[0] != first_worker

        # Kafka never delivered attempt 1 again: it started once, on the killed worker.
        reports = await reports_of(stack, workflow_id, lambda rs: started(rs, 2))
        assert [s.worker for s in started(reports, 1)] == [first_worker]
    finally:
        # Leave the session's stack as it was: worker-cpu-1 alone, alive.
        if killed is not None and killed is not second:
            stack.start(killed)  # restarts it (its pid file names a dead process)
        stack.stop(second)
        stack.services.remove(second)
        first = next(s for s in stack.services if s.name == "worker-cpu-1")
        assert localstack.read_pid(first.pid_file) is not None, stack.logs()


async def test_heartbeats_keep_a_long_attempt_alive_and_stay_out_of_the_history(
        stack: Stack) -> None:
    """A task running for three heartbeat timeouts succeeds at its first attempt: its
    heartbeats reach the coordinator on ``reports`` and move its lease, yet none is in
    the history (``HEADWATER_HISTORY_HEARTBEATS`` is off by default)."""
    spec = {"name": "long", "nodes": [{"id": "s", "task": "e2e.sleep",
                                        "input": {"seconds": scaled(6)},
                                        "heartbeat_timeout": scaled(2)}]}
    workflow_id = f"beats-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        response = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": spec})
        assert response.status_code == 202, response.text
    status = await wait_status(stack, workflow_id, timeout_s=60)
    assert status["status"] == "succeeded", status
    reports = await reports_of(stack, workflow_id,
                               lambda rs: any(isinstance(r, ev.TaskSucceeded) for r in rs))
    assert sum(isinstance(r, ev.TaskHeartbeated) for r in reports) >= 3
    records = await history(stack, workflow_id)
    kinds = [type(r.body).__name__ for r in sorted(records, key=lambda r: r.seq)]
    assert "TaskHeartbeated" not in kinds and "TaskFailed" not in kinds, kinds
    assert kinds.count("TaskDispatched") == 1, kinds
