"""What ``python -m fuzzer`` found, on the real broker: each input once, then the
coordinator must carry on.

A submission whose spec was nested 254 levels deep decoded, was accepted, and then no
batch holding it could write its table entry: the coordinator restarted for ever
("restarting: a batch failed half-way"), committing nothing, and every workflow on its
partitions stood still. Now the codec refuses JSON nested deeper than
``headwater.codec.MAX_JSON_DEPTH`` and the record is dead-lettered like any other.
"""

from __future__ import annotations

import time
import uuid

from stackkit import Stack, produce, read_topic, submit_to_kafka
from test_kafka_submission import SMALL_INPUT, SPEC, wait_status

from headwater import codec
from headwater.core import events as ev
from headwater.topics import CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE
from ops import localstack
from tests.polling import scaled


async def test_a_submission_nested_too_deep_is_dead_lettered_and_work_goes_on(
        stack: Stack) -> None:
    tag = uuid.uuid4().hex[:8]
    deep = f"deep-{tag}"
    value = (b'{"workflow_id": "' + deep.encode() + b'", "at_ms": '
             + str(int(time.time() * 1000)).encode() + b', "spec": '
             + b"[" * 254 + b"]" * 254 + b"}")
    coordinator = next(s for s in stack.services if s.name == "coordinator")
    log_before = coordinator.log_file.stat().st_size
    await produce([(stack.topics.submissions, deep.encode(), value)],
                  headers=[(CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE.encode())])
    after = f"after-deep-{tag}"
    await submit_to_kafka(stack, ev.WorkflowSubmitted(after, SPEC, SMALL_INPUT,
                                                      int(time.time() * 1000)))

    dead = await read_topic(stack.topics.dlq, lambda rs: any(r.key == deep.encode() for r in rs),
                            scaled(60), decode=False)
    reason = next(dict(r.headers)["reason"].decode() for r in dead if r.key == deep.encode())
    assert reason == f"spec: JSON nested deeper than {codec.MAX_JSON_DEPTH} levels"
    status = await wait_status(stack, after)
    assert status["status"] == "succeeded", status
    with open(coordinator.log_file, "rb") as f:
        f.seek(log_before)
        assert b"restarting:" not in f.read(), "the coordinator restarted"
    assert localstack.read_pid(coordinator.pid_file) is not None
