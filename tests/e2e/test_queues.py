"""Workers and queues you can see: workers announce themselves, ``GET /v1/queues`` shows
each queue's figures, a node without ``queue`` goes where its task is served, a task no
live worker serves is refused (400) unless queued anyway, a full queue answers 429, and
an attempt waiting on a dead queue shows in its run's status and in ``stuck``.

One gateway of the test's own (maxdepth 2 on ``qt-io``, no start-up grace) over the
session's stack, and a worker of its own on each of two fresh queues announcing every
half second; the ``qt-io`` one is SIGKILLed (it sends no stopping record), the
``qt-gpu`` one stopped with SIGTERM, whose task is admitted until the gateway's short
horizon (``HEADWATER_UNSERVED_AFTER_S``) passes. The CLI's ``headwater queues`` and
``stuck`` read the same deployment. And the figures themselves, read promptly after a
fetch of the oldest dispatch, and answered from memory when asked again.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import typer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from stackkit import BOOTSTRAP, Stack, produce
from typer.testing import CliRunner

from ops import localstack
from ops.cli.endpoints import Endpoints
from ops.cli.queues import queues as queues_command
from ops.cli.queues import wait_for_workers
from ops.cli.stuck import read_histories, read_serving
from ops.sandbox import free_port
from ops.stuck import scan
from services.common.clock import now_ms
from services.common.settings import CommonSettings
from services.common.topic_reader import TopicReader
from services.gateway.queues.figures import QueueFigures, overview
from services.worker.announce import decode_announcement, latest
from tests.polling import scaled, wait_until_async

ANNOUNCE = {"HEADWATER_ANNOUNCE_S": "0.5"}
HORIZON_S = scaled(15)
"""The gateway's ``HEADWATER_UNSERVED_AFTER_S``: short, to see it pass."""


@pytest.fixture(scope="module")
def queues_gateway(stack: Stack) -> Iterator[str]:
    """A gateway of the stack with ``qt-io`` maxdepth 2 and no grace, and one worker on
    each of ``qt-gpu`` and ``qt-io``; all stopped and taken off the stack's processes."""
    port = free_port()
    gateway = localstack.Service("gateway-queues", (sys.executable, "-m", "services.gateway"))
    workers = [localstack.Service(f"worker-{q}-1", (
        sys.executable, "-m", "services.worker", "--queue", q, "--tasks", "queue_tasks"))
        for q in ("qt-gpu", "qt-io")]
    started = []
    try:
        for w in workers:
            started.append(w)
            stack.start(w, ANNOUNCE)
        started.append(gateway)
        pid = stack.start(gateway, {"HEADWATER_GATEWAY_PORT": str(port),
                                    "HEADWATER_QUEUE_MAXDEPTH": "qt-io=2",
                                    "HEADWATER_ANNOUNCE_GRACE_S": "0",
                                    "HEADWATER_UNSERVED_AFTER_S": str(HORIZON_S)})
        localstack.wait_ready(f"http://127.0.0.1:{port}/ready", timeout_s=scaled(60),
                              pids=[pid])
        yield f"http://127.0.0.1:{port}"
    finally:
        for s in started:
            stack.stop(s)
            stack.services.remove(s)


def _queue(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next((q for q in doc["queues"] if q["queue"] == name), {})


async def test_queues_placement_refusals_and_a_dead_worker(stack: Stack,
                                                           queues_gateway: str) -> None:
    async with httpx.AsyncClient(base_url=queues_gateway, timeout=30) as client:
        async def queues() -> dict[str, Any]:
            return dict((await client.get("/v1/queues")).json())

        async def submit(spec: dict[str, Any], **extra: Any) -> httpx.Response:
            return await client.post("/v1/workflows", json={"workflow": spec, **extra})

        for queue in ("qt-gpu", "qt-io"):  # as a script that has just started a worker
            await asyncio.to_thread(wait_for_workers, queues_gateway, queue, scaled(60))
        doc = await queues()
        gpu = _queue(doc, "qt-gpu")
        assert gpu["tasks"] == ["qt.embed"] and gpu["state"] == "ok"
        assert gpu["workers"][0]["tasks"] == ["qt.embed"]
        assert gpu["workers"][0]["version"] and gpu["maxdepth"] == 0
        assert _queue(doc, "qt-io")["maxdepth"] == 2
        assert _queue(doc, "cpu")["live_workers"] >= 1  # the stack's own worker

        # A node without queue goes to the queue serving its task.
        placed = await submit({"name": "placed", "nodes": [
            {"id": "e", "task": "qt.embed", "input": {"text": "four"}}]})
        assert placed.status_code == 202, placed.text
        wid = placed.json()["id"]
        done = await wait_until_async(lambda: client.get(f"/v1/workflows/{wid}"), 60,
                                      "placed run done", until=lambda r:
                                      r.json()["status"] == "succeeded")
        assert done.json()["tasks"][0]["queue"] == "qt-gpu"

        # A task no live worker serves: 400 naming it and its queue; queued anyway: 202.
        unserved = {"name": "unserved", "nodes": [{"id": "u", "task": "qt.embed",
                                                   "queue": "qt-none"}]}
        refused = await submit(unserved)
        assert refused.status_code == 400, refused.text
        assert (refused.json()["task"], refused.json()["queue"]) == ("qt.embed", "qt-none")
        anyway = await submit(unserved, queue_anyway=True)
        assert anyway.status_code == 202, anyway.text
        waiting_id = anyway.json()["id"]

        # Its status says that its attempt waits on a queue without live workers.
        view = await wait_until_async(
            lambda: client.get(f"/v1/workflows/{waiting_id}"), 60, "dispatched",
            until=lambda r: r.json()["tasks"] and r.json()["tasks"][0]["status"] == "dispatched")
        assert view.json()["tasks"][0]["queue_state"] == "no_live_workers"
        assert "qt-none" in view.json()["warnings"][0]

        # SIGKILL the qt-io worker: it leaves the live list after 3 intervals (1.5 s).
        io_worker = next(s for s in stack.services if s.name == "worker-qt-io-1")
        os.kill(int(io_worker.pid_file.read_text()), signal.SIGKILL)
        await wait_until_async(queues, 30, "qt-io without live workers", until=lambda d:
                               _queue(d, "qt-io").get("state") == "no_live_workers")

        # Dispatches pile up on qt-io; at its maxdepth (2), 429 with Retry-After.
        piled = await submit({"name": "piled", "nodes": [
            {"id": "m", "kind": "map", "over": "${input.urls}", "task": "qt.fetch",
             "queue": "qt-io", "input": {"url": "${item}"}}]},
            input={"urls": ["a", "b", "c"]}, queue_anyway=True)
        assert piled.status_code == 202, piled.text
        await wait_until_async(queues, 60, "qt-io backlog 3", until=lambda d:
                               _queue(d, "qt-io").get("backlog") == 3)
        assert _queue(await queues(), "qt-io")["oldest_waiting_s"] is not None
        full = await submit({"name": "one-more", "nodes": [
            {"id": "f", "task": "qt.fetch", "queue": "qt-io", "input": {"url": "d"}}]},
            queue_anyway=True)
        assert full.status_code == 429, full.text
        assert int(full.headers["Retry-After"]) > 0 and full.json()["queue"] == "qt-io"

        # ``headwater queues`` prints the same; exit status 1: a queue is not ok.
        cli = typer.Typer()
        cli.command()(queues_command)
        printed = CliRunner().invoke(cli, ["--gateway", queues_gateway, "--json"])
        assert printed.exit_code == 1, printed.output
        assert _queue(json.loads(printed.output), "qt-io")["state"] == "no_live_workers"
        table = CliRunner().invoke(cli, ["--gateway", queues_gateway])
        assert table.exit_code == 1 and "qt-gpu" in table.output, table.output

        # ``headwater stuck`` lists the attempts waiting on queues without live workers.
        ep = Endpoints(BOOTSTRAP, stack.prefix, stack.dsn)
        histories, _ = await read_histories(ep)
        found = scan(histories, now_ms(), serving=await read_serving(ep))
        reasons = {s.workflow_id: s.reason for s in found.stuck}
        assert "no live worker" in reasons.get(waiting_id, ""), reasons
        assert "no live worker" in reasons.get(piled.json()["id"], ""), reasons

        for workflow_id in (waiting_id, piled.json()["id"]):
            await client.post(f"/v1/workflows/{workflow_id}/cancel")

    # A worker stopped with SIGTERM says so, then leaves a tombstone: compaction forgets it.
    gpu_worker = next(s for s in stack.services if s.name == "worker-qt-gpu-1")
    stack.stop(gpu_worker)
    async with TopicReader(BOOTSTRAP) as reader:
        records = await reader.read_to_end(stack.topics.workers)
    mine = [r for r in records if r.key == gpu["workers"][0]["worker_id"].encode()]
    assert mine[-1].value is None
    assert decode_announcement(mine[-2].value).stopping  # type: ignore[union-attr]
    kept = {w.queue for w in latest((r.key, r.value) for r in records).values()}
    assert "qt-io" in kept and "qt-gpu" not in kept  # the SIGKILLed one left no tombstone
    await _restart_horizon(queues_gateway)


async def _restart_horizon(gateway: str) -> None:
    """Its only worker just stopped (a deploy): qt-gpu shows no live workers at once, but
    its task is admitted, still placed there, until the horizon passes; then 400."""
    embed = {"name": "restarting", "nodes": [{"id": "e", "task": "qt.embed",
                                              "input": {"text": "x"}}]}
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as client:
        doc = (await client.get("/v1/queues")).json()
        assert _queue(doc, "qt-gpu")["state"] == "no_live_workers"
        admitted = await client.post("/v1/workflows", json={"workflow": embed})
        assert admitted.status_code == 202, admitted.text
        wid = admitted.json()["id"]
        view = await wait_until_async(lambda: client.get(f"/v1/workflows/{wid}"), 60,
                                      "dispatched", until=lambda r: r.json()["tasks"])
        assert view.json()["tasks"][0]["queue"] == "qt-gpu"
        await client.post(f"/v1/workflows/{wid}/cancel")

        async def submit_and_cancel() -> httpx.Response:
            response = await client.post("/v1/workflows", json={"workflow": embed})
            if response.status_code == 202:
                await client.post(f"/v1/workflows/{response.json()['id']}/cancel")
            return response

        refused = await wait_until_async(submit_and_cancel, 15 + 30,
                                         "400 once the horizon passed",
                                         until=lambda r: r.status_code != 202, interval_s=1.0)
        assert refused.status_code == 400, refused.text
        assert (refused.json()["task"], refused.json()["queue"]) == ("qt.embed", "cpu")


async def test_queue_figures_are_read_promptly_after_a_fetch(services: None) -> None:
    """Reading the oldest waiting dispatch leaves no consumer long-polling in front of
    the next offset requests (each waited ``fetch.max.wait.ms``, 500 ms, so a ``GET
    /v1/queues`` took 1 to 2.5 s), and a figure asked again answers from memory."""
    settings = CommonSettings(bootstrap=BOOTSTRAP, prefix=f"qlat{os.getpid()}{now_ms()}")
    topic = settings.topics.tasks("lat")
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        await admin.close()
    await produce([(topic, b"wf-1", b"a"), (topic, b"wf-2", b"b")])

    class NoWorkers:
        def live(self, now: int) -> list[Any]:
            return []

        def lost_workers(self, now: int) -> list[Any]:
            return []

        def queues(self) -> set[str]:
            return {"lat"}

    figures = QueueFigures(settings)
    await figures.start()
    try:
        first = await figures._lag("lat")  # fetches the oldest record
        loop = asyncio.get_running_loop()
        started = loop.time()
        again = await figures._lag("lat")  # uncached
        uncached_s = loop.time() - started
        assert (first.backlog, again.backlog) == (2, 2) and again.oldest_ms is not None
        assert uncached_s < 0.4, f"an uncached read took {uncached_s:.2f} s"
        await overview(figures, NoWorkers(), {})  # type: ignore[arg-type]
        await asyncio.sleep(1.2)  # past CACHE_S: stale, answered at once, read again
        started = loop.time()
        shown = await overview(figures, NoWorkers(), {})  # type: ignore[arg-type]
        cached_s = loop.time() - started
        assert [(q["queue"], q["backlog"]) for q in shown] == [("lat", 2)]
        assert shown[0]["oldest_waiting_s"] is not None
        assert cached_s < 0.1, f"an idle overview took {cached_s:.3f} s"
    finally:
        await figures.stop()
