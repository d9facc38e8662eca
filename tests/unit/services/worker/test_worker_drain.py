"""A worker's graceful stop (``Worker.stop``, ``drain``) over fake Kafka clients: it takes
nothing more, leaves the group with the dispatches it did not start uncommitted, lets the
running attempts end and report (heartbeating meanwhile) within the window, and stops
the rest as ``WorkerStopped``; a cancel during the drain stops at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from worker_fakes import (
    GATE,
    TP0,
    FakeConsumer,
    FakeProducer,
    dispatch,
    outbox,
    outcomes,
    records,
    settings,
    started,
    wait_until,
)

from headwater.core import events as ev
from services.worker.app import Worker
from services.worker.intake import Intake


async def serve(worker: Worker, consumer: FakeConsumer,
                producer: FakeProducer) -> asyncio.Task[None]:
    """``worker.serve`` over the fakes, in the background."""
    box = await outbox(producer)
    intake = Intake(consumer, worker.settings.concurrency)  # type: ignore[arg-type]
    return asyncio.create_task(worker.serve(intake, box))


async def gated_attempt(drain_s: float,
                        ) -> tuple[FakeConsumer, FakeProducer, Worker, asyncio.Task[None]]:
    """A worker serving one dispatch of ``unit.gated`` (it runs until ``GATE`` is set)."""
    GATE.clear()
    consumer = FakeConsumer({TP0: records(dispatch("unit.gated", {"n": 1}, workflow_id="a"))})
    producer = FakeProducer()
    worker = Worker(settings(drain_s=drain_s))
    return consumer, producer, worker, await serve(worker, consumer, producer)


def heartbeats(producer: FakeProducer, workflow_id: str) -> int:
    return sum(isinstance(r, ev.TaskHeartbeated) and r.workflow_id == workflow_id
               for r in producer.reports())


async def test_running_attempts_finish_and_dispatches_not_started_stay_uncommitted() -> None:
    GATE.clear()
    consumer = FakeConsumer({TP0: records(
        dispatch("unit.gated", {"n": 1}, workflow_id="a", heartbeat_timeout_s=0.6),
        dispatch("unit.ok", workflow_id="b"))})
    producer = FakeProducer()
    worker = Worker(settings(concurrency=1, drain_s=10))
    served = await serve(worker, consumer, producer)
    try:
        await wait_until(lambda: consumer.committed.get(TP0) == 1)  # a started
        worker.stop()
        await wait_until(lambda: consumer.left)
        beats = heartbeats(producer, "a")
        await wait_until(lambda: heartbeats(producer, "a") > beats)  # still heartbeating
        assert not served.done()
        GATE.set()
        await asyncio.wait_for(served, 2)  # returns: drained, not cancelled
    finally:
        GATE.set()
        served.cancel()
    assert started(producer) == ["a"]  # b was never started here...
    assert consumer.committed == {TP0: 1}  # ...and stays for the partition's next owner
    assert isinstance(outcomes(producer)["a"], ev.TaskSucceeded)
    assert outcomes(producer)["a"].output == 1


async def test_attempts_running_when_the_window_ends_are_stopped_as_worker_stopped() -> None:
    consumer, producer, worker, served = await gated_attempt(drain_s=0.3)
    try:
        await wait_until(lambda: consumer.committed.get(TP0) == 1)
        worker.stop()
        await asyncio.wait_for(served, 5)  # returns after the window, not cancelled
    finally:
        GATE.set()
        served.cancel()
    stopped = outcomes(producer)["a"]
    assert isinstance(stopped, ev.TaskFailed)
    assert (stopped.error_type, stopped.retryable) == ("WorkerStopped", True)
    assert consumer.left


async def test_a_cancel_during_the_drain_stops_at_once() -> None:
    consumer, producer, worker, served = await gated_attempt(drain_s=30)
    try:
        await wait_until(lambda: consumer.committed.get(TP0) == 1)
        worker.stop()
        await wait_until(lambda: consumer.left)
        served.cancel()  # the second SIGTERM
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(served, 2)
    finally:
        GATE.set()
    stopped = outcomes(producer)["a"]
    assert isinstance(stopped, ev.TaskFailed) and stopped.error_type == "WorkerStopped"


async def test_a_worker_stopped_before_it_serves_leaves_at_once() -> None:
    consumer = FakeConsumer({TP0: records(dispatch("unit.ok", workflow_id="a"))})
    producer = FakeProducer()
    worker = Worker(settings())
    worker.stop()
    await asyncio.wait_for(await serve(worker, consumer, producer), 2)
    assert consumer.left and consumer.polls == 0 and producer.reports() == []


async def test_records_fetched_as_the_stop_arrives_are_given_back() -> None:
    consumer = FakeConsumer({TP0: records(dispatch("unit.ok", workflow_id="a"),
                                          dispatch("unit.ok", workflow_id="b"))})
    intake = Intake(consumer, 4)  # type: ignore[arg-type]
    fetch = consumer.getmany

    async def stopped_meanwhile(**kwargs: Any) -> Any:
        got = await fetch(**kwargs)
        intake.stop_taking()
        return got

    consumer.getmany = stopped_meanwhile  # type: ignore[method-assign]
    assert await intake.take() == []
    assert consumer.position[TP0] == 0 and consumer.paused() == {TP0}
    assert (intake.running, intake.tracker.in_flight) == (0, 0)
    assert await intake.take() == []
    await intake.leave()
    assert consumer.committed == {} and consumer.left


async def test_leaving_commits_first_and_later_commits_do_nothing() -> None:
    consumer = FakeConsumer({TP0: []})
    intake = Intake(consumer, 4)  # type: ignore[arg-type]
    intake.tracker.started(TP0, 0)
    intake.committable(TP0, 0)
    await intake.leave()
    assert consumer.committed == {TP0: 1} and consumer.left
    intake.tracker.started(TP0, 1)
    intake.committable(TP0, 1)
    await intake.commit()  # the fake asserts it is not committed to after leaving
    assert consumer.committed == {TP0: 1}


async def test_settled_waits_for_starts_then_gives_up_after_the_timeout() -> None:
    intake = Intake(FakeConsumer({TP0: []}), 4)  # type: ignore[arg-type]
    intake.tracker.started(TP0, 0)
    intake.tracker.started(TP0, 1)
    asyncio.get_running_loop().call_later(0.05, intake.committable, TP0, 0)
    assert await intake.settled(0.3) == 1  # offset 1 never started
    asyncio.get_running_loop().call_later(0.05, intake.committable, TP0, 1)
    assert await intake.settled(2) == 0
