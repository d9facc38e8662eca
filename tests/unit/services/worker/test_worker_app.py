"""The worker (``Worker.serve``) over fake Kafka clients: every dispatch ends in a report
that can be sent, its offset moves on, and task code cannot stop the worker."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.errors import ProducerClosed
from worker_fakes import (
    GATE,
    QUEUE,
    TP0,
    TP1,
    FakeConsumer,
    FakeProducer,
    Record,
    dispatch,
    outbox,
    outcomes,
    records,
    serving,
    settings,
    wait_until,
)

from headwater import TaskContext, task
from headwater.core import events as ev
from services.worker.app import Worker
from services.worker.intake import Intake


@task(name="unit.app.surrogate_error", queue=QUEUE)
def surrogate_error() -> None:
    raise RuntimeError("bad \ud800 byte")


@task(name="unit.app.surrogate_progress", queue=QUEUE)
def surrogate_progress(ctx: TaskContext) -> str:
    ctx.progress(0.5, "half \udc80 way")
    return "done"


@task(name="unit.app.big", queue=QUEUE)
def big(size: int) -> str:
    return "x" * size


@task(name="unit.app.exit", queue=QUEUE)
def exit_() -> None:
    raise SystemExit(1)


@task(name="unit.app.aexit", queue=QUEUE)
async def aexit() -> None:
    raise KeyboardInterrupt


async def test_reports_with_lone_surrogates_are_sent_cleaned_and_offsets_move_on() -> None:
    consumer = FakeConsumer({TP0: records(
        dispatch("unit.app.surrogate_error", workflow_id="a"),
        dispatch("unit.app.surrogate_progress", workflow_id="b"),
        dispatch("unit.ok", {"n": 7}, workflow_id="c"))})
    producer = FakeProducer()
    async with serving(Worker(settings()), consumer, producer):
        await wait_until(lambda: consumer.committed.get(TP0) == 3
                         and set(outcomes(producer)) == {"a", "b", "c"})
    sent = outcomes(producer)
    assert isinstance(sent["a"], ev.TaskFailed) and sent["a"].error == "bad ? byte"
    assert sent["a"].retryable
    progress = [r for r in producer.reports() if isinstance(r, ev.TaskProgressed)]
    assert [p.message for p in progress] == ["half ? way"]
    assert sent["b"].output == "done" and sent["c"].output == 7


async def test_an_output_over_max_output_bytes_fails_without_retry() -> None:
    consumer = FakeConsumer({TP0: records(
        dispatch("unit.app.big", {"size": 5000}, workflow_id="a"),
        dispatch("unit.app.big", {"size": 10}, workflow_id="b"))})
    producer = FakeProducer()
    async with serving(Worker(settings(max_output_bytes=1000)), consumer, producer):
        await wait_until(lambda: consumer.committed.get(TP0) == 2
                         and set(outcomes(producer)) == {"a", "b"})
    sent = outcomes(producer)
    assert isinstance(sent["a"], ev.TaskFailed) and not sent["a"].retryable
    assert sent["a"].error.startswith("output is 50")
    assert sent["a"].error.endswith("bytes, over the limit of 1000 (HEADWATER_MAX_OUTPUT_BYTES)")
    assert sent["b"].output == "x" * 10


async def test_an_output_kafka_refuses_is_replaced_by_a_failure() -> None:
    consumer = FakeConsumer({TP0: records(
        dispatch("unit.app.big", {"size": 5000}, workflow_id="a"),
        dispatch("unit.ok", workflow_id="b"))})
    producer = FakeProducer(max_bytes=2000)  # MessageSizeTooLargeError over 2000 bytes
    async with serving(Worker(settings()), consumer, producer):
        await wait_until(lambda: consumer.committed.get(TP0) == 2
                         and set(outcomes(producer)) == {"a", "b"})
    sent = outcomes(producer)
    assert isinstance(sent["a"], ev.TaskFailed) and not sent["a"].retryable
    assert "MessageSizeTooLargeError" in sent["a"].error
    assert sent["b"].output == 0


async def test_system_exit_and_keyboard_interrupt_in_tasks_do_not_stop_the_worker() -> None:
    consumer = FakeConsumer({TP0: records(
        dispatch("unit.app.exit", workflow_id="a"),
        dispatch("unit.app.aexit", workflow_id="b"),
        dispatch("unit.ok", {"n": 1}, workflow_id="c"))})
    producer = FakeProducer()
    async with serving(Worker(settings()), consumer, producer):
        await wait_until(lambda: consumer.committed.get(TP0) == 3
                         and set(outcomes(producer)) == {"a", "b", "c"})
    sent = outcomes(producer)
    assert (sent["a"].error_type, sent["a"].retryable) == ("SystemExit", True)
    assert (sent["b"].error_type, sent["b"].retryable) == ("KeyboardInterrupt", True)
    assert sent["c"].output == 1


async def test_stopping_fails_started_attempts_as_retryable_and_commits_them() -> None:
    GATE.clear()
    consumer = FakeConsumer({TP0: records(dispatch("unit.ok", workflow_id="a")),
                             TP1: records(dispatch("unit.gated", {"n": 1}))})
    producer = FakeProducer()
    box = await outbox(producer)
    served = asyncio.create_task(Worker(settings()).serve(Intake(consumer, 4), box))  # type: ignore[arg-type]
    try:
        await wait_until(lambda: consumer.committed == {TP0: 1, TP1: 1})  # committed at start
        await wait_until(lambda: "a" in outcomes(producer))
        served.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(served, 2)
    finally:
        GATE.set()
    stopped = outcomes(producer)["wf"]  # not delivered again: the coordinator retries it
    assert isinstance(stopped, ev.TaskFailed)
    assert (stopped.error_type, stopped.retryable) == ("WorkerStopped", True)
    assert outcomes(producer)["a"].output == 0


async def test_an_undecodable_record_is_dead_lettered_and_its_offset_moves_on() -> None:
    consumer = FakeConsumer({TP0: [Record(0, b"\x00garbage", b"k"),
                                   *records(dispatch("unit.ok", workflow_id="b"), start=1)]})
    producer = FakeProducer()
    async with serving(Worker(settings()), consumer, producer):
        await wait_until(lambda: consumer.committed.get(TP0) == 2 and "b" in outcomes(producer))
    assert producer.sent[0][0] == "t.dlq" and producer.sent[0][1:] == (b"\x00garbage", b"k")
    assert outcomes(producer)["b"].output == 0


async def test_when_no_report_can_be_sent_the_dispatch_stays_uncommitted() -> None:
    consumer = FakeConsumer({TP0: records(dispatch("unit.ok", workflow_id="a"),
                                          dispatch("unit.ok", workflow_id="b"))})
    # a's TaskStarted, its log's last batch, its outcome, the outcome's stand-in
    producer = FakeProducer(errors=[ProducerClosed()] * 4)
    async with serving(Worker(settings(concurrency=1)), consumer, producer):
        await wait_until(lambda: "b" in outcomes(producer))
        await asyncio.sleep(0.05)
        assert consumer.committed.get(TP0, 0) == 0  # a is delivered again after a restart
