"""Garbage on every input topic goes to the DLQ; the coordinator carries on."""

from __future__ import annotations

import time
import uuid
from typing import Any

import asyncpg
import orjson
from stackkit import Stack, produce, read_topic, submit_to_kafka
from test_kafka_submission import SMALL_INPUT, SPEC, wait_status

from headwater import codec
from headwater.core import events as ev
from tests.polling import scaled


async def test_garbage_goes_to_dlq_and_valid_work_still_runs(stack: Stack) -> None:
    tag = uuid.uuid4().hex[:8]
    sent = {
        stack.topics.submissions: b"\x00garbage-" + tag.encode(),
        stack.topics.control: b"\xc3\x01" + b"\xff" * 8 + tag.encode(),  # unknown fingerprint
        stack.topics.reports: codec.encode(ev.TaskSucceeded(f"x-{tag}", "n", None, 1, 1, 1))[:-2],
    }
    await produce((topic, f"bad-{tag}".encode(), value) for topic, value in sent.items())
    workflow_id = f"after-garbage-{tag}"
    await submit_to_kafka(stack, ev.WorkflowSubmitted(workflow_id, SPEC, SMALL_INPUT,
                                                      int(time.time() * 1000)))

    def all_found(records: list[object]) -> bool:
        return {r.value for r in records} >= set(sent.values())  # type: ignore[attr-defined]

    dead = await read_topic(stack.topics.dlq, all_found, scaled(60), decode=False)
    for record in dead:
        if record.value in sent.values():
            headers = dict(record.headers)
            source = headers["source-topic"].decode()
            assert sent[source] == record.value
            assert headers["reason"], "every dead letter says why"
            assert record.key == f"bad-{tag}".encode()
    status = await wait_status(stack, workflow_id)
    assert status["status"] == "succeeded", status


async def test_values_the_projection_cannot_index_go_to_dlq(stack: Stack) -> None:
    """A 9 KB tenant or definition, or a 3000-character spec name, produced straight to
    Kafka (Avro or JSON) is dead-lettered with the reason; the projection never sees it
    (PostgreSQL refuses an index row over 2704 bytes), so later runs are projected."""
    tag = uuid.uuid4().hex[:8]
    now = int(time.time() * 1000)
    long_name = {**SPEC, "name": "n" * 3000}
    avro = {
        f"tenant-{tag}": ev.WorkflowSubmitted(f"tenant-{tag}", SPEC, SMALL_INPUT, now, "t" * 9000),
        f"defn-{tag}": ev.WorkflowSubmitted(f"defn-{tag}", SPEC, SMALL_INPUT, now, None,
                                            "d" * 9000, 1),
        f"name-{tag}": ev.WorkflowSubmitted(f"name-{tag}", long_name, SMALL_INPUT, now),
        f"version-{tag}": ev.WorkflowSubmitted(f"version-{tag}", SPEC, SMALL_INPUT, now,
                                               None, "defn", -5),
    }
    json_id = f"json-tenant-{tag}"
    await submit_to_kafka(stack, *avro.values())
    await produce([(stack.topics.submissions, json_id.encode(), orjson.dumps(
        {"workflow_id": json_id, "spec": SPEC, "at_ms": now, "tenant": "t" * 9000}))],
        headers=[("content-type", b"application/json")])
    after = f"after-unindexable-{tag}"
    await submit_to_kafka(stack, ev.WorkflowSubmitted(after, SPEC, SMALL_INPUT, now))
    bad = {*avro, json_id}

    def all_found(records: list[Any]) -> bool:
        return {(r.key or b"").decode() for r in records} >= bad

    dead = await read_topic(stack.topics.dlq, all_found, scaled(60), decode=False)
    reasons = {r.key.decode(): dict(r.headers)["reason"].decode() for r in dead
               if (r.key or b"").decode() in bad}
    assert reasons[f"tenant-{tag}"].startswith("tenant: "), reasons
    assert reasons[json_id].startswith("tenant: "), reasons
    assert reasons[f"defn-{tag}"].startswith("definition: "), reasons
    assert reasons[f"name-{tag}"].startswith("spec: name: at most 200"), reasons
    assert reasons[f"version-{tag}"].startswith("definition_version: "), reasons
    status = await wait_status(stack, after)
    assert status["status"] == "succeeded", status
    conn = await asyncpg.connect(stack.dsn)
    try:
        rows = await conn.fetch("select workflow_id from workflows where workflow_id = any($1)",
                                sorted(bad))
    finally:
        await conn.close()
    assert rows == [], "the projection never sees them"
