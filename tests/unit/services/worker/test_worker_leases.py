"""Commit at start (the lease model): a dispatch's offset is committed once its
``TaskStarted`` is acknowledged, long before the attempt ends, while its slot stays held
until then; a dispatch whose ``TaskStarted`` was not acknowledged stays uncommitted."""

from __future__ import annotations

import asyncio

from aiokafka.errors import ProducerClosed
from worker_fakes import (
    GATE,
    TP0,
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

from services.worker.app import Worker


async def test_a_started_dispatch_is_committed_while_it_runs_and_keeps_its_slot() -> None:
    GATE.clear()
    consumer = FakeConsumer({TP0: records(dispatch("unit.gated", {"n": 1}, workflow_id="a"),
                                          dispatch("unit.ok", workflow_id="b"))})
    producer = FakeProducer()
    worker = Worker(settings(concurrency=1))
    try:
        async with serving(worker, consumer, producer):
            await wait_until(lambda: consumer.committed.get(TP0) == 1)
            assert started(producer) == ["a"] and outcomes(producer) == {}
            await asyncio.sleep(0.2)
            assert started(producer) == ["a"]  # one slot, still held by a
            GATE.set()
            await wait_until(lambda: consumer.committed.get(TP0) == 2)
    finally:
        GATE.set()
    assert sorted(outcomes(producer)) == ["a", "b"]


async def test_without_an_acknowledged_start_the_commit_waits_for_the_outcome() -> None:
    GATE.clear()
    consumer = FakeConsumer({TP0: records(dispatch("unit.gated", {"n": 1}, workflow_id="a"))})
    producer = FakeProducer(errors=[ProducerClosed()])  # TaskStarted is dropped
    try:
        async with serving(Worker(settings()), consumer, producer):
            await asyncio.sleep(0.3)
            assert consumer.committed.get(TP0, 0) == 0  # a crash now: delivered again
            GATE.set()
            await wait_until(lambda: consumer.committed.get(TP0) == 1)
    finally:
        GATE.set()
    assert started(producer) == [] and outcomes(producer)["a"].output == 1
