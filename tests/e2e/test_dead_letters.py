"""Garbage on every input topic goes to the DLQ; the coordinator carries on."""

from __future__ import annotations

import time
import uuid

from stackkit import Stack, produce, read_topic, submit_to_kafka
from test_kafka_submission import SMALL_INPUT, SPEC, wait_status

from headwater import codec
from headwater.core import events as ev
from tests.waiting import scaled


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
