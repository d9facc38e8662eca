"""Producing reports (``Outbox``): retried while Kafka is away, replaced when refused."""

from __future__ import annotations

import logging

import pytest
from aiokafka.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    NotLeaderForPartitionError,
    OutOfOrderSequenceNumber,
    ProducerClosed,
    RecordTooLargeError,
    TopicAuthorizationFailedError,
)
from worker_fakes import FakeProducer, outbox

from headwater.core import events as ev
from services.worker.outbox import transient

BASE = ("wf", "n", None, 2, 1000)


@pytest.mark.parametrize(("error", "expected"), [
    (KafkaTimeoutError(), True),
    (KafkaConnectionError(), True),
    (NotLeaderForPartitionError(), True),
    (MessageSizeTooLargeError(), False),
    (RecordTooLargeError(), False),
    (TopicAuthorizationFailedError(), False),
    (ProducerClosed(), False),
    (ValueError("x"), False),
])
def test_transient_errors(error: Exception, expected: bool) -> None:
    assert transient(error) is expected


async def test_transient_errors_are_retried_until_the_report_is_sent() -> None:
    producer = FakeProducer(errors=[KafkaTimeoutError(), KafkaConnectionError(),
                                    NotLeaderForPartitionError()])
    report = ev.TaskSucceeded(*BASE, {"ok": True})
    await (await outbox(producer)).report(report)
    assert producer.reports() == [report]


async def test_a_refused_success_is_replaced_by_a_non_retryable_failure(
        caplog: pytest.LogCaptureFixture) -> None:
    producer = FakeProducer(errors=[RecordTooLargeError("broker says no")])
    with caplog.at_level(logging.WARNING, logger="headwater.worker"):
        await (await outbox(producer)).report(ev.TaskSucceeded(*BASE, "output"))
    [sent] = producer.reports()
    assert isinstance(sent, ev.TaskFailed)
    assert (sent.workflow_id, sent.node, sent.attempt) == ("wf", "n", 2)
    assert (sent.error_type, sent.retryable) == ("ReportNotSentError", False)
    assert "RecordTooLargeError" in sent.error
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


async def test_a_refused_progress_report_is_dropped() -> None:
    producer = FakeProducer(errors=[MessageSizeTooLargeError()])
    await (await outbox(producer)).report(ev.TaskProgressed(*BASE, 0.5, "m"))
    assert producer.reports() == []


async def test_when_even_the_stand_in_is_refused_the_error_goes_up() -> None:
    producer = FakeProducer(errors=[ProducerClosed(), ProducerClosed()])
    with pytest.raises(ProducerClosed):
        await (await outbox(producer)).report(ev.TaskFailed(*BASE, "boom", "RuntimeError", True))


async def test_a_dead_letter_kafka_refuses_is_skipped_not_fatal() -> None:
    producer = FakeProducer(errors=[MessageSizeTooLargeError()])
    sent = await (await outbox(producer)).dead_letter("t.dlq", b"garbage", b"k", [("reason", b"x")])
    assert sent is False
    assert await (await outbox(producer)).dead_letter("t.dlq", b"garbage", b"k", []) is True
    assert producer.sent == [("t.dlq", b"garbage", b"k")]


async def test_a_producer_broken_by_a_refused_batch_is_replaced() -> None:
    # After the broker refuses a batch as too large, an idempotent producer's sequence
    # numbers have a gap: it refuses everything after (OutOfOrderSequenceNumber).
    broken = FakeProducer(errors=[MessageSizeTooLargeError()] + [OutOfOrderSequenceNumber()] * 9)
    fresh = FakeProducer()
    box = await outbox(broken, 1024 * 1024, fresh)
    await box.report(ev.TaskSucceeded(*BASE, "output"))
    assert broken.stopped and box.producer is fresh
    [sent] = fresh.reports()
    assert isinstance(sent, ev.TaskFailed) and "MessageSizeTooLargeError" in sent.error
    await box.report(ev.TaskStarted(*BASE))
    assert len(fresh.reports()) == 2
