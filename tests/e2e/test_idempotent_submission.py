"""Idempotent submission on the real stack: over HTTP (50 concurrent identical POSTs,
another body under the same id) and straight to Kafka (delivered twice, another body)."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx
from stackkit import Stack, history, read_topic, submit_to_kafka
from test_kafka_submission import wait_status

from headwater import codec
from headwater.core import events as ev
from headwater.core.idempotency import body_hash
from headwater.topics import REASON_HEADER
from tests.polling import scaled

SPEC = {"name": "idem", "nodes": [
    {"id": "a", "task": "e2e.sleep", "input": {"seconds": "${input.s}"}},
    {"id": "b", "task": "e2e.flaky", "needs": ["a"],
     "input": {"succeed_on": 1, "value": "${nodes.a.output}"}}]}


def accepted(records: list[ev.HistoryEvent]) -> list[ev.WorkflowAccepted]:
    return [r.body for r in records if isinstance(r.body, ev.WorkflowAccepted)]


async def test_fifty_concurrent_identical_posts_make_exactly_one_run(stack: Stack) -> None:
    workflow_id = f"idem-{uuid.uuid4().hex[:8]}"
    body = {"id": workflow_id, "workflow": SPEC, "input": {"s": 0.2}}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=60,
                                 limits=httpx.Limits(max_connections=50)) as client:
        responses = await asyncio.gather(*(client.post("/v1/workflows", json=body)
                                           for _ in range(50)))
        codes = sorted(r.status_code for r in responses)
        assert codes.count(202) == 1, codes
        assert set(codes) <= {200, 202, 409}, codes
        assert {r.json()["id"] for r in responses if r.status_code < 300} == {workflow_id}
        for r in responses:
            if r.status_code == 409:  # only "being submitted; retry", never "different"
                assert "retry" in r.json()["detail"], r.json()
        status = await wait_status(stack, workflow_id)
        assert status["status"] == "succeeded"
        again = await client.post("/v1/workflows", json=body)
        assert again.status_code == 200 and again.json()["id"] == workflow_id

        other = await client.post("/v1/workflows", json={**body, "input": {"s": 0.3}})
        assert other.status_code == 409
        assert other.headers["content-type"] == "application/problem+json"
        assert "different submission" in other.json()["detail"]
        after = (await client.get(f"/v1/workflows/{workflow_id}")).json()
    assert after["input"] == {"s": 0.2} and after["seq"] == status["seq"]
    records = await history(stack, workflow_id)
    (only,) = accepted(records)
    assert body_hash(only.spec, only.input, only.tenant) == body_hash(SPEC, {"s": 0.2}, None)
    assert sum(isinstance(r.body, ev.TaskDispatched) for r in records) == 2


async def test_a_kafka_submission_delivered_twice_is_one_run_and_another_body_is_dead_lettered(
        stack: Stack) -> None:
    workflow_id = f"idem-kafka-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    first = ev.WorkflowSubmitted(workflow_id, SPEC, {"s": 0.5}, now)
    duplicate = ev.WorkflowSubmitted(workflow_id, SPEC, {"s": 0.5}, now + 7)
    other = ev.WorkflowSubmitted(workflow_id, SPEC, {"s": 9}, now + 9)
    await submit_to_kafka(stack, first, first, duplicate, other)
    status = await wait_status(stack, workflow_id)
    assert status["status"] == "succeeded"
    assert status["input"] == {"s": 0.5}
    records = await history(stack, workflow_id)
    (only,) = accepted(records)
    assert only.input == {"s": 0.5}
    assert sum(isinstance(r.body, ev.TaskDispatched) for r in records) == 2

    key = workflow_id.encode()
    dead = await read_topic(stack.topics.dlq, lambda rs: any(r.key == key for r in rs),
                            scaled(60), decode=False)
    (letter,) = [r for r in dead if r.key == key]
    assert codec.decode(letter.value) == other
    reason = dict(letter.headers)[REASON_HEADER].decode()
    assert "already used by a different submission" in reason


async def test_the_same_body_over_http_after_kafka_is_the_same_run(stack: Stack) -> None:
    workflow_id = f"idem-cross-{uuid.uuid4().hex[:8]}"
    body = {"s": 0.1, "big": 1e16, "zero": -0.0}  # numbers jsonb would rewrite
    record = ev.WorkflowSubmitted(workflow_id, SPEC, body, int(time.time() * 1000))
    await submit_to_kafka(stack, record)
    assert (await wait_status(stack, workflow_id))["status"] == "succeeded"
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        same = await client.post("/v1/workflows",
                                 json={"id": workflow_id, "workflow": SPEC, "input": body})
        assert same.status_code == 200, same.text
        other = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": SPEC,
                                                         "input": {**body, "s": 0.2}})
        assert other.status_code == 409, other.text


async def test_an_id_whose_rows_retention_deleted_stays_the_same_run(stack: Stack) -> None:
    """Projection retention deletes an ended run's rows; the coordinator still has the
    run (or its marker). A retry of the same request is that run (200, nothing claimed),
    another body 409: never a 202 whose claim no event would ever update."""
    import asyncpg

    from services.projector.retention import purge_once

    workflow_id = f"retired-{uuid.uuid4().hex[:8]}"
    body = {"id": workflow_id, "workflow": SPEC, "input": {"s": 0.1}}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=60) as client:
        assert (await client.post("/v1/workflows", json=body)).status_code == 202
        assert (await wait_status(stack, workflow_id))["status"] == "succeeded"
        conn = await asyncpg.connect(stack.dsn)
        try:
            await conn.execute("update workflows set updated_at = now() - interval '1 hour'"
                               " where workflow_id = $1", workflow_id)
            assert await purge_once(conn, 60) >= 1
            kept = await conn.fetchrow("select status from retired_ids where workflow_id = $1",
                                       workflow_id)
            assert kept is not None and kept["status"] == "succeeded"
            again = await client.post("/v1/workflows", json=body)
            assert again.status_code == 200, again.text
            assert again.json()["id"] == workflow_id and again.json()["status"] == "succeeded"
            other = await client.post("/v1/workflows", json={**body, "input": {"s": 0.2}})
            assert other.status_code == 409 and "retention" in other.json()["detail"]
            assert await conn.fetchval("select count(*) from workflows where workflow_id = $1",
                                       workflow_id) == 0  # no claim left behind
        finally:
            await conn.close()
    assert len(accepted(await history(stack, workflow_id))) == 1
