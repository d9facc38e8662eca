"""Taking dispatches (``Intake``) over a fake consumer: busy workers keep polling with
their partitions paused, records that do not fit are given back, commits may fail."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiokafka.errors import CommitFailedError, IllegalStateError
from worker_fakes import (
    GATE,
    TP0,
    TP1,
    FakeConsumer,
    FakeProducer,
    dispatch,
    outcomes,
    records,
    serving,
    settings,
    started,
    wait_until,
)

from services.worker import intake as intake_module
from services.worker.app import Worker
from services.worker.intake import Intake


async def test_while_every_slot_is_busy_the_loop_keeps_polling_paused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intake_module, "BUSY_POLL_S", 0.01)
    GATE.clear()
    consumer = FakeConsumer({TP0: records(*(dispatch("unit.gated", {"n": i}, workflow_id=f"w{i}")
                                            for i in range(3)))})
    producer = FakeProducer()
    try:
        async with serving(Worker(settings(concurrency=1)), consumer, producer):
            await wait_until(lambda: consumer.polls_while_paused >= 5)
            assert consumer.paused() == {TP0}
            assert started(producer) == ["w0"]
            GATE.set()
            await wait_until(lambda: consumer.committed.get(TP0) == 3)
            assert consumer.paused() == set()
    finally:
        GATE.set()
    assert sorted(outcomes(producer)) == ["w0", "w1", "w2"]
    assert started(producer) == ["w0", "w1", "w2"]  # each ran once


async def test_records_of_a_partition_assigned_while_busy_are_held_and_taken_in_turn(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intake_module, "BUSY_POLL_S", 0.01)
    GATE.clear()
    consumer = FakeConsumer({
        TP0: records(dispatch("unit.gated", {"n": 0}, workflow_id="a", at_ms=1_000)),
        TP1: records(dispatch("unit.ok", {"n": 1}, workflow_id="b", at_ms=2_000),
                     dispatch("unit.ok", {"n": 2}, workflow_id="c", at_ms=3_000))})
    consumer.pause(TP1)  # assigned while paused: resumed, since it holds nothing
    producer = FakeProducer()
    try:
        async with serving(Worker(settings(concurrency=1)), consumer, producer):
            # Both partitions' records fetched and held; the oldest taken; the
            # partitions with records held paused, so that no more of them comes.
            await wait_until(lambda: consumer.position == {TP0: 1, TP1: 2})
            await wait_until(lambda: started(producer) == ["a"])
            assert consumer.paused() == {TP1}
            consumer.unpause_during_next_poll = {TP1}  # as a rebalance would
            polls = consumer.polls
            await wait_until(lambda: consumer.polls >= polls + 3)  # busy, still polling
            assert consumer.position[TP1] == 2 and consumer.paused() == {TP1}
            GATE.set()
            await wait_until(lambda: consumer.committed == {TP0: 1, TP1: 2})
    finally:
        GATE.set()
    assert started(producer) == ["a", "b", "c"]


@pytest.mark.parametrize("error", [
    CommitFailedError("the group has already rebalanced"),
    IllegalStateError("Partition is not assigned"),
])
async def test_a_failed_commit_is_logged_and_the_worker_carries_on(
        error: Exception, caplog: pytest.LogCaptureFixture) -> None:
    consumer = FakeConsumer({TP0: records(dispatch("unit.ok", workflow_id="a"),
                                          dispatch("unit.ok", workflow_id="b"))})
    consumer.commit_errors.append(error)
    producer = FakeProducer()
    with caplog.at_level(logging.WARNING, logger="headwater.worker"):
        async with serving(Worker(settings()), consumer, producer):
            await wait_until(lambda: consumer.committed.get(TP0) == 2)
    assert any(type(error).__name__ in r.getMessage() for r in caplog.records)


async def test_revoked_partitions_are_forgotten_even_when_the_commit_fails() -> None:
    consumer = FakeConsumer({TP0: []}, commit_errors=[CommitFailedError("rebalanced")])
    intake = Intake(consumer, 4)  # type: ignore[arg-type]
    intake.tracker.started(TP0, 5)
    intake.tracker.finished(TP0, 5)
    await intake.listener.on_partitions_revoked({TP0})
    assert intake.tracker.committable() == {}
    assert consumer.committed == {}


async def test_partitions_assigned_while_busy_are_paused() -> None:
    consumer = FakeConsumer({TP0: [], TP1: []})
    intake = Intake(consumer, 1)  # type: ignore[arg-type]
    intake.running = 1
    await intake.listener.on_partitions_assigned({TP1})
    assert consumer.paused() == {TP1}
    intake.running = 0
    await intake.listener.on_partitions_assigned({TP0})
    assert consumer.paused() == {TP1}


async def test_take_holds_a_slot_per_record_until_done() -> None:
    consumer = FakeConsumer({TP0: records(*(dispatch("unit.ok") for _ in range(3)))})
    intake = Intake(consumer, 2)  # type: ignore[arg-type]
    taken = await intake.take()
    assert [r.offset for _, r in taken] == [0, 1] and intake.full
    intake.committable(TP0, 1)
    intake.release()  # 0 is still not committable: its offset is not committed
    await intake.commit()
    assert consumer.committed == {TP0: 0}
    assert [r.offset for _, r in await intake.take()] == [2]


async def test_an_offset_is_committable_before_its_slot_is_released() -> None:
    consumer = FakeConsumer({TP0: records(*(dispatch("unit.ok") for _ in range(2)))})
    intake = Intake(consumer, 1)  # type: ignore[arg-type]
    assert [r.offset for _, r in await intake.take()] == [0]
    intake.committable(TP0, 0)  # started: no redelivery needed, but still running
    await intake.commit()
    assert consumer.committed == {TP0: 1} and intake.full
    intake.release()
    assert [r.offset for _, r in await intake.take()] == [1]


@pytest.mark.parametrize("hops", range(4))
async def test_a_cancel_arriving_with_a_wake_up_is_not_lost(hops: int) -> None:
    # The worker stopping just as a slot frees: a lost cancel left ``serve`` polling forever.
    intake = Intake(FakeConsumer({TP0: []}), 1)  # type: ignore[arg-type]
    intake.running = 1
    taking = asyncio.create_task(intake.take())
    await asyncio.sleep(0)  # it waits for a free slot
    intake.release()
    for _ in range(hops):  # let the wake-up travel that many loop iterations
        await asyncio.sleep(0)
    if taking.done():
        return  # it returned before the cancel came: nothing to lose
    taking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await taking
