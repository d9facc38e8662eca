"""A lost worker is visible at once: the only worker of queue ``lw`` (a process of the
test's own, with the default announce interval) runs 4 attempts and is SIGKILLed; within
one heartbeat interval (a third of the tasks' 30 s ``heartbeat_timeout``: 10 s) each of
its running attempts is marked ``worker_state: lost`` with when it was last heard, the
run's ``warnings`` say so, ``GET /v1/queues`` shows the queue without live workers and
the worker among its ``lost_workers``, and a new submission needing the queue is
accepted (its worker was heard within the horizon) with ``warnings`` naming it. The
seconds measured are printed (``-s``)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from stackkit import Stack

from ops import localstack
from ops.cli.queues import wait_for_workers
from tests.polling import scaled, wait_until_async

HEARTBEAT_INTERVAL_S = 10.0
"""A third of the default ``heartbeat_timeout`` (30 s): what "at once" is held to."""
MAP = {"name": "lost", "nodes": [{"id": "m", "kind": "map", "over": "${input.items}",
                                  "task": "lw.hold", "input": {"seconds": 300}}]}


@pytest.fixture
def lw_worker(stack: Stack) -> Iterator[localstack.Service]:
    """The only worker of queue ``lw``, 4 attempts at once; taken off the stack after."""
    worker = localstack.Service("worker-lw-1", (sys.executable, "-m", "services.worker",
                                                "--queue", "lw", "--tasks", "lost_tasks"))
    stack.start(worker, {"HEADWATER_CONCURRENCY": "4"})
    try:
        yield worker
    finally:
        stack.stop(worker)
        stack.services.remove(worker)


def _queue(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next((q for q in doc["queues"] if q["queue"] == name), {})


async def test_a_sigkilled_worker_is_lost_within_a_heartbeat_interval(
        stack: Stack, lw_worker: localstack.Service) -> None:
    entry = await asyncio.to_thread(wait_for_workers, stack.gateway, "lw", scaled(60))
    worker_id = entry["workers"][0]["worker_id"]
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        accepted = await client.post("/v1/workflows", json={
            "workflow": MAP, "input": {"items": [1, 2, 3, 4]}})
        assert accepted.status_code == 202, accepted.text
        assert "warnings" not in accepted.json()  # its queue has a live worker
        wid = accepted.json()["id"]

        async def view() -> dict[str, Any]:
            return dict((await client.get(f"/v1/workflows/{wid}")).json())

        running = await wait_until_async(view, 60, "4 attempts running", until=lambda d: [
            t["status"] for t in d["tasks"]] == ["running"] * 4)
        assert {t["worker"] for t in running["tasks"]} == {worker_id}
        assert not any("worker_state" in t for t in running["tasks"])
        await wait_until_async(lambda: client.get("/v1/queues"), 30, "lw 4 in flight",
                               until=lambda r: _queue(r.json(), "lw").get("in_flight") == 4)

        os.kill(int(lw_worker.pid_file.read_text()), signal.SIGKILL)
        killed_at, killed_wall = time.monotonic(), time.time()

        lost = await wait_until_async(view, 30, "every attempt marked lost", until=lambda d:
                                      all(t.get("worker_state") == "lost" for t in d["tasks"]),
                                      interval_s=0.05)
        marked_s = time.monotonic() - killed_at
        queues = await wait_until_async(lambda: client.get("/v1/queues"), 30,
                                        "lw without live workers", interval_s=0.05,
                                        until=lambda r: _queue(r.json(), "lw").get(
                                            "live_workers") == 0)
        gone_s = time.monotonic() - killed_at
        print(f"\nattempts marked lost {marked_s:.2f} s after the SIGKILL; "
              f"out of GET /v1/queues after {gone_s:.2f} s")
        assert marked_s < HEARTBEAT_INTERVAL_S and gone_s < HEARTBEAT_INTERVAL_S
        for task in lost["tasks"]:
            assert task["status"] == "running"  # its lease has not lapsed yet
            heard = datetime.fromisoformat(task["worker_last_heard_at"]).timestamp()
            assert killed_wall - 5 < heard <= killed_wall + 0.5, (heard, killed_wall)
        assert len([w for w in lost["warnings"] if f"'{worker_id}', which is lost" in w]) == 4
        queue = _queue(queues.json(), "lw")
        assert queue["state"] == "no_live_workers"
        assert [(w["worker_id"], w["in_flight"]) for w in queue["lost_workers"]] == [
            (worker_id, 4)]

        # Admitted (its worker was heard within the horizon), and told it has no worker.
        again = await client.post("/v1/workflows", json={
            "workflow": MAP, "input": {"items": [1]}})
        assert again.status_code == 202, again.text
        assert again.json()["warnings"] == [
            "queue 'lw' has no live worker now: the run waits until one serves it"]
        for run in (wid, again.json()["id"]):
            await client.post(f"/v1/workflows/{run}/cancel")
