"""A bulk cancel whose gateway died mid-way is taken over and finished, each run
counted once and none sent twice (the session's stack, the real broker and
PostgreSQL): 20 waiting runs;
the dead gateway's last record says it acted on the first 10 (it had cancelled them,
and 2 more after that record, with the operation's reason); its lease is long past.
The running gateway takes the operation over from target 10, counts the 2 it had
cancelled as done (not skipped, not cancelled again) and cancels the other 8: 20 done,
and the control topic holds one cancel request for each run."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
from stackkit import BOOTSTRAP, Stack, decoded

from headwater.core import events as ev
from headwater.operations import Outcome, Progress, cancel_reason
from services.common.clock import now_ms
from services.common.db import connect_pool
from services.common.kafka.client import make_producer
from services.common.settings import CommonSettings
from services.common.topic_reader import TopicReader
from services.gateway.operations import store
from tests.polling import wait_until_async

WAITING: dict[str, Any] = {"name": "takeover", "nodes": [
    {"id": "hold", "kind": "wait", "signal": "go", "timeout": 3600}]}


def test_a_dead_gateways_operation_is_finished_once(stack: Stack) -> None:
    asyncio.run(_takeover(stack))


async def _takeover(stack: Stack) -> None:
    team, op = f"k{uuid.uuid4().hex[:8]}", f"op-k{uuid.uuid4().hex[:8]}"
    targets = [f"{team}-{i:02d}" for i in range(20)]
    reason = cancel_reason(op, "")
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        for wid in targets:
            r = await client.post("/v1/workflows", json={"id": wid, "workflow": WAITING,
                                                         "labels": {"team": team}})
            assert r.status_code == 202, r.text
        for wid in targets[:12]:  # what the dead gateway had done
            await wait_until_async(lambda w=wid: _status(client, w), 60, f"{wid} running",
                                   until=lambda s: s == "running")
            r = await client.post(f"/v1/workflows/{wid}/cancel", json={"reason": reason})
            assert r.status_code == 202, r.text

        progress = Progress(op, "cancel", {}, {"label": [f"team:{team}"]}, targets, None,
                            now_ms())
        for wid in targets[:10]:
            progress.count(wid, Outcome.DONE)
        settings = CommonSettings(bootstrap=BOOTSTRAP, prefix=stack.prefix)
        producer, pool = make_producer(settings), await connect_pool(stack.dsn)
        await producer.start()
        try:
            await store.write(producer, pool, settings, progress.record(now_ms()),
                              "dead-gateway", 10)
            await pool.execute("update operations set heartbeat_at = now() - interval"
                               " '1 hour' where operation_id = $1", op)
        finally:
            await producer.stop()
            await pool.close()

        async def operation() -> dict[str, Any]:
            return dict((await client.get(f"/v1/operations/{op}")).json())
        done = await wait_until_async(operation, 60, f"{op} taken over and done",
                                      until=lambda d: d.get("state") == "done")
        assert done["counts"] == {"done": 20, "skipped": 0, "failed": 0}, done
        await wait_until_async(lambda: _ids(client, team), 60, "the 20 runs cancelled",
                               until=lambda found: found == set(targets))
    async with TopicReader(BOOTSTRAP) as reader:
        control = decoded(await reader.read_to_end(stack.topics.control))  # others' bad ones out
    cancels = [r.workflow_id for r in control if isinstance(r, ev.CancelRequested)
               and r.workflow_id in targets]
    assert sorted(cancels) == targets  # one each: none of the 12 cancelled again
    assert all(r.reason == reason for r in control if isinstance(r, ev.CancelRequested)
               and r.workflow_id in targets)


async def _ids(client: httpx.AsyncClient, team: str) -> set[str]:
    response = await client.get("/v1/workflows", params={
        "label": f"team:{team}", "status": "cancelled", "limit": 100})
    return {item["id"] for item in response.json()["items"]}


async def _status(client: httpx.AsyncClient, workflow_id: str) -> str:
    return str((await client.get(f"/v1/workflows/{workflow_id}")).json().get("status"))
