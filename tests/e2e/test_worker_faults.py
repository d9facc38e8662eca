"""Task code that used to wedge or kill the worker, on the real broker: every attempt
ends in a report the coordinator gets, the worker lives on, and its offsets move on."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from stackkit import BOOTSTRAP, Stack, history
from test_kafka_submission import wait_status

from headwater.core import events as ev
from ops import localstack
from tests.polling import wait_until_async

RETRY = {"max_attempts": 2, "backoff_base": 0.2, "backoff_max": 0.2, "jitter": 0}


async def submit(client: httpx.AsyncClient, name: str, task: str,
                 input: dict[str, Any] | None = None) -> str:
    """Submit a one-node workflow running ``task``; return its id."""
    workflow_id = f"{name}-{uuid.uuid4().hex[:8]}"
    node = {"id": "t", "task": task, "retry": RETRY, "input": input or {}}
    response = await client.post("/v1/workflows", json={
        "id": workflow_id, "workflow": {"name": name, "nodes": [node]}})
    assert response.status_code == 202, response.text
    return workflow_id


async def wait_all_committed(stack: Stack, timeout_s: float = 60.0) -> None:
    """Wait until the worker group has committed every record of ``tasks.cpu``
    (``timeout_s`` scaled, see ``tests/polling.py``)."""
    topic, group = stack.topics.tasks("cpu"), stack.topics.worker_group("cpu")
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    consumer = AIOKafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None)
    await admin.start()
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]

        async def offsets() -> dict[str, dict[int, int]]:
            ends = {tp: o for tp, o in (await consumer.end_offsets(tps)).items() if o}
            found = await admin.list_consumer_group_offsets(group)
            return {"committed": {tp.partition: found[tp].offset for tp in ends if tp in found},
                    "ends": {tp.partition: o for tp, o in ends.items()}}

        await wait_until_async(offsets, timeout_s, f"{group} committed all of {topic}",
                               until=lambda o: o["committed"] == o["ends"], interval_s=0.5)
    finally:
        await consumer.stop()
        await admin.close()


def worker_pids(stack: Stack) -> list[int | None]:
    """The pid of each of the stack's workers, None for a dead one."""
    return [localstack.read_pid(s.pid_file) for s in stack.services
            if s.name.startswith("worker-")]


async def test_unsendable_reports_and_exiting_tasks_end_their_workflows(stack: Stack) -> None:
    pids = worker_pids(stack)
    assert pids and None not in pids
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        ids = {
            # 17 MiB: over the producer's 16 MiB limit and the worker's 1 MiB output
            # limit, so it goes by reference (headwater/blobs.py) and its report is small.
            "big": await submit(client, "big", "e2e.big_output", {"size": 17 * 1024 * 1024}),
            "surrogate": await submit(client, "surrogate", "e2e.surrogate_error"),
            "progress": await submit(client, "progress", "e2e.surrogate_progress"),
            "exit": await submit(client, "exit", "e2e.exit", {"kind": "exit"}),
            "interrupt": await submit(client, "interrupt", "e2e.exit", {"kind": "interrupt"}),
            "aexit": await submit(client, "aexit", "e2e.aexit"),
        }
        status = {k: await wait_status(stack, v, timeout_s=90) for k, v in ids.items()}
        after = await submit(client, "after", "e2e.flaky", {"succeed_on": 1})
        assert (await wait_status(stack, after))["status"] == "succeeded"

    assert status["big"]["status"] == "succeeded", status["big"]
    assert b'"bytes":17825794' in orjson.dumps(status["big"]), status["big"]  # a reference
    assert status["surrogate"]["status"] == "failed"
    assert "failed after 2 attempts: RuntimeError: bad ? byte" in str(status["surrogate"]["error"])
    assert status["progress"]["status"] == "succeeded"
    for key, error_type in (("exit", "SystemExit"), ("interrupt", "KeyboardInterrupt"),
                            ("aexit", "SystemExit")):
        assert status[key]["status"] == "failed", status[key]
        assert f"failed after 2 attempts: {error_type}" in str(status[key]["error"])

    big = [r.body for r in await history(stack, ids["big"])]
    assert sum(isinstance(b, ev.TaskDispatched) for b in big) == 1  # not retried
    progress = [r.body for r in await history(stack, ids["progress"])]
    assert [b.message for b in progress if isinstance(b, ev.TaskProgressed)] == ["half ? way"]

    assert worker_pids(stack) == pids  # the same worker, alive
    await wait_all_committed(stack)
