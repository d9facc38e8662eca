"""A Kafka topic as a trigger, on the real broker: 1,000 JSON records (one malformed)
start 999 runs, each exactly once, across a SIGKILL of the stack's coordinator taken
mid-way and its restart; the malformed record is dead-lettered with a reason naming the
trigger, topic, partition, offset and fault; the trigger's lag is shown by
``GET /v1/queues`` and ``/metrics``. A gateway killed after its first batch of
submissions was acknowledged, before its offsets were committed, reads the batch again
once restarted: the same submissions, the same runs."""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections import Counter
from typing import Any

import httpx
import orjson
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from stackkit import BOOTSTRAP, Stack, produce, read_topic

from headwater.core import events as ev
from headwater.topics import REASON_HEADER
from ops import localstack
from ops.sandbox import home_kept, set_home
from tests.polling import wait_until_async

RECORDS = 1000
MALFORMED = 500
"""The index of the record whose value is not JSON."""
PARTITIONS = 4


def _service(stack: Stack, name: str) -> localstack.Service:
    return next(s for s in stack.services if s.name == name)


def _kill_and_restart(stack: Stack) -> None:
    """SIGKILL the stack's coordinator by its pid, wait for its end, start it again."""
    service = _service(stack, "coordinator")
    with home_kept():
        set_home(str(stack.home))
        pid = int(service.pid_file.read_text())
        os.kill(pid, signal.SIGKILL)
        while localstack.alive(pid):
            time.sleep(0.05)
        stack.start(service)


async def _source_topic(name: str, partitions: int = PARTITIONS) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        await admin.close()


def _value(i: int) -> bytes:
    return b"{not json" if i == MALFORMED else orjson.dumps({"n": i, "kind": "order"})


async def _recorded(stack: Stack, prefix: str, body: type, at_least: int) -> Counter[str]:
    """How many ``body`` events each run with ``prefix`` has recorded, once at least
    ``at_least`` runs have one. A coordinator killed between publishing a batch and
    committing its inputs publishes it again on restart: readers dedupe by
    ``(workflow_id, seq)``, and so does this."""
    def seen(records: list[Any]) -> set[tuple[str, int]]:
        return {(r.workflow_id, r.seq) for r in records
                if isinstance(r.body, body) and r.workflow_id.startswith(prefix)}
    records = await read_topic(stack.topics.events, lambda rs: len(seen(rs)) >= at_least, 120)
    return Counter(workflow_id for workflow_id, _ in seen(records))


async def test_a_topic_of_a_thousand_records_starts_999_runs_once_across_a_kill(
        stack: Stack) -> None:
    tag = uuid.uuid4().hex[:8]
    topic, name, definition = f"{stack.topics.prefix}.orders-{tag}", f"orders-{tag}", f"ship-{tag}"
    await _source_topic(topic)
    await produce((topic, f"k{i % 50}".encode(), _value(i)) for i in range(RECORDS))
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        stored = await client.put(f"/v1/definitions/{definition}", json={
            "workflow": {"name": definition, "nodes": [
                {"id": "a", "task": "e2e.digest", "input": {"value": "${input.n}"}}]},
            "input_schema": {"type": "object", "required": ["n"],
                             "properties": {"n": {"type": "integer"}}}})
        assert stored.status_code in (200, 201), stored.text
        put = await client.put(f"/v1/triggers/{name}", json={
            "topic": topic, "definition": definition, "start": "earliest",
            "filter": [{"pointer": "/value/kind", "equals": "order"}],
            "input": {"n": "${value.n}"}})
        assert put.status_code == 201, put.text

        prefix = f"trigger:{name}:"
        await _recorded(stack, prefix, ev.WorkflowAccepted, 100)
        _kill_and_restart(stack)  # mid-way: most records are still to come

        accepted = await _recorded(stack, prefix, ev.WorkflowAccepted, RECORDS - 1)
        assert len(accepted) == RECORDS - 1 and set(accepted.values()) == {1}, \
            accepted.most_common(3)

        async def lag() -> Any:
            doc = (await client.get("/v1/queues")).json()
            return next((t for t in doc.get("triggers") or () if t["name"] == name), None)
        shown = await wait_until_async(lag, 60, "the trigger's lag at 0",
                                       until=lambda t: t is not None and t["lag"] == 0)
        assert len(shown["partitions"]) == PARTITIONS
        assert sum(p["end"] for p in shown["partitions"]) == RECORDS
        metrics = (await client.get("/metrics")).text
        assert f'headwater_trigger_lag_records{{partition="0",trigger="-/{name}"}} 0.0' in metrics
        assert (await client.delete(f"/v1/triggers/{name}")).status_code == 200

    dead = await read_topic(stack.topics.dlq, lambda rs: any(
        dict(r.headers).get("trigger") == f"-/{name}".encode() for r in rs), 60, decode=False)
    mine = [r for r in dead if dict(r.headers).get("trigger") == f"-/{name}".encode()]
    assert len(mine) == 1 and mine[0].value == b"{not json"
    reason = dict(mine[0].headers)[REASON_HEADER].decode()
    assert reason.startswith(f"trigger -/{name}: record {topic}[") and "value: not JSON" in reason
    assert f"]@{dict(mine[0].headers)['source-offset'].decode()}: " in reason


def _restart_gateway(stack: Stack, env: dict[str, str] | None = None) -> localstack.Service:
    """Stop the stack's gateway (by pid), start it with ``env``, wait until it is ready."""
    service = _service(stack, "gateway")
    with home_kept():
        set_home(str(stack.home))
        stack.stop(service)
        stack.start(service, env)
    localstack.wait_ready(f"{stack.gateway}/ready", 60)
    return service


async def test_a_gateway_killed_before_committing_submits_the_same_runs_again(
        stack: Stack) -> None:
    tag = uuid.uuid4().hex[:8]
    topic, name, definition = f"{stack.topics.prefix}.refunds-{tag}", f"refunds-{tag}", f"r-{tag}"
    count = 200
    await _source_topic(topic, 1)
    await produce((topic, None, orjson.dumps({"n": i})) for i in range(count))
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        stored = await client.put(f"/v1/definitions/{definition}", json={"workflow": {
            "name": definition, "nodes": [{"id": "a", "kind": "sleep", "duration": 0.01}]}})
        assert stored.status_code in (200, 201), stored.text
    gateway = _restart_gateway(stack, {"HEADWATER_FAULTS": "gateway.trigger_acked=1"})
    pid = int(gateway.pid_file.read_text())
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        put = await client.put(f"/v1/triggers/{name}", json={
            "topic": topic, "definition": definition, "start": "earliest",
            "id": f"r{tag}-" + "${value.n}", "input": {}})
        assert put.status_code == 201, put.text
    await wait_until_async(lambda: not localstack.alive(pid), 30, "the gateway's kill")
    _restart_gateway(stack)

    accepted = await _recorded(stack, f"r{tag}-", ev.WorkflowAccepted, count)
    assert len(accepted) == count and set(accepted.values()) == {1}

    def submitted(records: list[Any]) -> Counter[str]:
        return Counter(r.workflow_id for r in records
                       if isinstance(r, ev.WorkflowSubmitted)
                       and r.workflow_id.startswith(f"r{tag}-"))
    # Every run once, and more submissions than runs: the batch produced before the kill
    # was produced again after the restart (a timeout here: it was not read again).
    records = await read_topic(stack.topics.submissions, lambda rs: len(submitted(rs)) >= count
                               and sum(submitted(rs).values()) > count, 60)
    assert submitted(records)[f"r{tag}-0"] == 2  # the first batch, again
    assert set(submitted(records).values()) <= {1, 2}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        assert (await client.delete(f"/v1/triggers/{name}")).status_code == 200
