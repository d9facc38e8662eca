"""Selectors on the real broker: two workers on one queue, one announcing ``gpu`` and
one announcing nothing. A node requiring ``gpu`` runs every item on the tagged worker
(the ``TaskStarted`` of each attempt names it), a node without requirements on either;
``GET /v1/queues`` shows the tags and the selector topic. A start requiring ``tpu`` is
refused with 400 naming it; queued anyway, it waits on its selector topic until a
worker announcing ``tpu`` starts, then completes on that worker.

A gateway of the test's own (no start-up grace) over the session's stack; the workers
look for selector topics every half second (``HEADWATER_LANES_S``).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from stackkit import Stack, history

from headwater.core import events as ev
from ops import localstack
from ops.sandbox import free_port
from tests.polling import scaled, wait_until_async

QUEUE = "sel-q"
FAST = {"HEADWATER_ANNOUNCE_S": "0.5", "HEADWATER_LANES_S": "0.5"}
ITEMS = 16


def _worker(name: str) -> localstack.Service:
    return localstack.Service(name, (sys.executable, "-m", "services.worker", "--queue", QUEUE,
                                     "--tasks", "selector_tasks", "--concurrency", "2"))


@pytest.fixture(scope="module")
def selector_stack(stack: Stack) -> Iterator[tuple[str, list[localstack.Service]]]:
    """A gateway without grace and two workers of ``sel-q``, one tagged ``gpu``; all
    stopped and taken off the stack's processes at the end (with any the test adds)."""
    port = free_port()
    gateway = localstack.Service("gateway-selectors", (sys.executable, "-m", "services.gateway"))
    started = [_worker("worker-sel-gpu"), _worker("worker-sel-plain")]
    try:
        stack.start(started[0], {**FAST, "HEADWATER_WORKER_TAGS": "gpu"})
        stack.start(started[1], FAST)
        started.append(gateway)
        pid = stack.start(gateway, {"HEADWATER_GATEWAY_PORT": str(port),
                                    "HEADWATER_ANNOUNCE_GRACE_S": "0"})
        localstack.wait_ready(f"http://127.0.0.1:{port}/ready", timeout_s=scaled(60),
                              pids=[pid])
        yield f"http://127.0.0.1:{port}", started
    finally:
        for s in started:
            stack.stop(s)
            stack.services.remove(s)


def _queue(doc: dict[str, Any]) -> dict[str, Any]:
    return next((q for q in doc["queues"] if q["queue"] == QUEUE), {})


def _started_by(events: list[ev.HistoryEvent], node: str) -> list[str]:
    return [e.body.worker for e in events
            if isinstance(e.body, ev.TaskStarted) and e.body.node == node]


async def test_selectors_route_refuse_and_wait(
        stack: Stack, selector_stack: tuple[str, list[localstack.Service]]) -> None:
    base, started = selector_stack
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        async def queues() -> dict[str, Any]:
            return dict((await client.get("/v1/queues")).json())

        async def submit(spec: dict[str, Any], **extra: Any) -> httpx.Response:
            return await client.post("/v1/workflows", json={"workflow": spec, **extra})

        async def finished(wid: str) -> dict[str, Any]:
            done = await wait_until_async(lambda: client.get(f"/v1/workflows/{wid}"), 120,
                                          f"{wid} succeeded", until=lambda r:
                                          r.json()["status"] == "succeeded")
            return dict(done.json())

        doc = await wait_until_async(queues, 60, "two workers of sel-q", until=lambda d:
                                     _queue(d).get("live_workers") == 2)
        tags = {w["worker_id"]: w["tags"] for w in _queue(doc)["workers"]}
        gpu = next(w for w, t in tags.items() if t == ["gpu"])
        plain = next(w for w, t in tags.items() if t == [])
        assert _queue(doc)["tags"] == ["gpu"]

        # A satisfiable selector runs only on the matching worker; the rest on either.
        spec = {"name": "selected", "nodes": [
            {"id": "g", "kind": "map", "task": "sel.work", "queue": QUEUE,
             "over": "${input.xs}", "input": {"n": "${item}"}, "requires": ["gpu"]},
            {"id": "p", "kind": "map", "task": "sel.work", "queue": QUEUE,
             "over": "${input.xs}", "input": {"n": "${item}"}},
            {"id": "one", "task": "sel.work", "queue": QUEUE, "input": {"n": 21},
             "requires": ["gpu"]}],
            "output": {"g": "${nodes.g.output}", "one": "${nodes.one.output}"}}
        accepted = await submit(spec, input={"xs": list(range(ITEMS))})
        assert accepted.status_code == 202, accepted.text
        wid = accepted.json()["id"]
        view = await finished(wid)
        assert view["output"] == {"g": [2 * i for i in range(ITEMS)], "one": 42}
        events = await history(stack, wid)
        on_gpu = _started_by(events, "g") + _started_by(events, "one")
        assert len(on_gpu) >= ITEMS + 1 and set(on_gpu) == {gpu}, on_gpu
        assert set(_started_by(events, "p")) <= {gpu, plain}
        shown = {"requires": ["gpu"], "topic": stack.topics.needs(QUEUE, ["gpu"]),
                 "backlog": 0}
        await wait_until_async(queues, 30, "the gpu selector topic shown", until=lambda d:
                               shown in _queue(d)["selectors"])

        # An unsatisfiable one: 400 naming the selector and the tags the workers have.
        tpu = {"name": "tpu", "nodes": [{"id": "t", "task": "sel.work", "queue": QUEUE,
                                         "input": {"n": 5}, "requires": ["tpu"]}]}
        refused = await submit(tpu)
        assert refused.status_code == 400, refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
        problem = refused.json()
        assert problem["title"] == "No worker matches the selector"
        assert (problem["queue"], problem["requires"], problem["missing"]) == (
            QUEUE, ["tpu"], ["tpu"])
        assert sorted(problem["worker_tags"]) == [[], ["gpu"]]
        assert "node 't'" in problem["detail"] and "[tpu]" in problem["detail"]

        # Queued anyway, it waits on its selector topic: no worker of sel-q takes it.
        anyway = await submit(tpu, queue_anyway=True)
        assert anyway.status_code == 202, anyway.text
        waiting = anyway.json()["id"]
        topic = stack.topics.needs(QUEUE, ["tpu"])
        await wait_until_async(queues, 60, "the tpu dispatch waiting", until=lambda d: {
            "requires": ["tpu"], "topic": topic, "backlog": 1} in _queue(d)["selectors"])
        await asyncio.sleep(scaled(3))  # several looks of both workers
        view = (await client.get(f"/v1/workflows/{waiting}")).json()
        assert view["status"] == "running" and view["tasks"][0]["status"] == "dispatched"
        assert view["tasks"][0]["queue_state"] == "unmatched", view["tasks"][0]
        assert any("announcing the tags [tpu]" in w for w in view["warnings"]), view

        # A worker announcing tpu starts: it finds the topic and runs the task.
        tpu_worker = _worker("worker-sel-tpu")
        started.append(tpu_worker)
        stack.start(tpu_worker, {**FAST, "HEADWATER_WORKER_TAGS": "tpu,fast"})
        await finished(waiting)
        ran = _started_by(await history(stack, waiting), "t")
        assert ran and not {gpu, plain} & set(ran), ran
        doc = await queues()
        assert [w["tags"] for w in _queue(doc)["workers"]
                if w["worker_id"] == ran[0]] == [["fast", "tpu"]]
