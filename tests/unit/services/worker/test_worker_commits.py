"""Offset commits off the poll loop (``services.worker.commits``, ``Intake.committing``):
asks are coalesced, one commit is in flight at a time and at most one starts per
interval, the loop never waits for one, and what is committable is still committed, and
waited for, before partitions are revoked and as the worker stops."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

import pytest
from aiokafka import TopicPartition
from worker_fakes import (
    TP0,
    FakeConsumer,
    FakeProducer,
    dispatch,
    outbox,
    outcomes,
    records,
    serving,
    settings,
    wait_until,
)

from services.worker import commits as commits_module
from services.worker.app import Worker
from services.worker.commits import Committer
from services.worker.intake import Intake


@dataclass
class Commits:
    """A commit that records when each began, how many ran at once, and may be held."""

    gate: asyncio.Event = field(default_factory=asyncio.Event)
    began: list[float] = field(default_factory=list)
    ended: int = 0
    at_once: int = 0
    most_at_once: int = 0
    errors: list[BaseException] = field(default_factory=list)

    async def __call__(self) -> None:
        self.began.append(time.monotonic())
        self.at_once += 1
        self.most_at_once = max(self.most_at_once, self.at_once)
        try:
            await self.gate.wait()
            if self.errors:
                raise self.errors.pop(0)
            self.ended += 1
        finally:
            self.at_once -= 1


@dataclass
class SlowCommits(FakeConsumer):
    """A consumer whose commits wait for ``gate``; ``commits`` in the order they landed."""

    gate: asyncio.Event = field(default_factory=asyncio.Event)
    commits: list[dict[TopicPartition, int]] = field(default_factory=list)

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        await self.gate.wait()
        await super().commit(offsets)
        self.commits.append(dict(offsets))


async def test_asks_within_an_interval_become_one_commit_each_interval() -> None:
    commit = Commits()
    commit.gate.set()
    committer = Committer(commit, interval_s=0.4)
    async with committer.running():
        for _ in range(20):  # well within the interval
            committer.soon()
            await asyncio.sleep(0.001)
        await wait_until(lambda: commit.ended == 2)
        await asyncio.sleep(0.5)  # no ask since: no third commit
    assert committer.started == commit.ended == 2
    assert commit.began[1] - commit.began[0] >= 0.4


async def test_one_commit_at_a_time_and_an_ask_meanwhile_gets_the_next() -> None:
    commit = Commits()
    committer = Committer(commit, interval_s=0.0)
    async with committer.running():
        committer.soon()
        await wait_until(lambda: len(commit.began) == 1)
        for _ in range(5):
            committer.soon()  # returns at once: nobody waits for the commit
            await asyncio.sleep(0.01)
        assert len(commit.began) == 1  # the first is still under way
        commit.gate.set()
        await wait_until(lambda: commit.ended == 2)
        await asyncio.sleep(0.05)
    assert commit.most_at_once == 1 and len(commit.began) == 2


async def test_leaving_lets_a_commit_under_way_end() -> None:
    commit = Commits()
    committer = Committer(commit, interval_s=10.0)

    async def run() -> None:
        async with committer.running():
            committer.soon()
            await wait_until(lambda: len(commit.began) == 1)

    leaving = asyncio.create_task(run())
    await asyncio.sleep(0.05)
    assert not leaving.done()  # it waits for the commit, which it does not cancel
    commit.gate.set()
    await asyncio.wait_for(leaving, 2)  # not after the 10 s interval
    assert commit.ended == 1


async def test_a_commit_that_raises_is_logged_and_the_next_ask_commits_again(
        caplog: pytest.LogCaptureFixture) -> None:
    commit = Commits(errors=[RuntimeError("boom")])
    commit.gate.set()
    committer = Committer(commit, interval_s=0.0)
    with caplog.at_level(logging.ERROR, logger="headwater.worker"):
        async with committer.running():
            committer.soon()
            await wait_until(lambda: not commit.errors and commit.at_once == 0)
            committer.soon()
            await wait_until(lambda: commit.ended == 1)
    assert "committing offsets failed" in caplog.text


async def test_a_commit_does_not_wake_a_take_waiting_for_a_slot() -> None:
    consumer = FakeConsumer({TP0: records(*(dispatch("unit.ok") for _ in range(2)))})
    intake = Intake(consumer, 1)  # type: ignore[arg-type]
    async with intake.committing():
        assert [r.offset for _, r in await intake.take()] == [0]
        taking = asyncio.create_task(intake.take())
        await asyncio.sleep(0.01)  # it waits for a free slot
        intake.committable(TP0, 0)  # started: no redelivery needed, but still running
        await wait_until(lambda: consumer.committed == {TP0: 1})  # in the background
        assert not taking.done() and intake.full
        intake.release()
        assert await taking == []
        assert [r.offset for _, r in await intake.take()] == [1]


async def test_the_loop_takes_and_runs_dispatches_while_a_commit_hangs() -> None:
    consumer = SlowCommits({TP0: records(*(dispatch("unit.ok", workflow_id=f"w{i}")
                                           for i in range(5)))})
    producer = FakeProducer()
    async with serving(Worker(settings(concurrency=1)), consumer, producer):
        await wait_until(lambda: len(outcomes(producer)) == 5)  # one slot: one at a time
        assert consumer.committed == {}  # the first commit is still under way
        consumer.gate.set()
        await wait_until(lambda: consumer.committed == {TP0: 5})
    assert consumer.commits[-1] == {TP0: 5}
    assert len(consumer.commits) <= 3  # the first, then what came meanwhile, coalesced


async def test_a_revoke_waits_for_the_commit_under_way_then_commits_the_rest() -> None:
    consumer = SlowCommits({TP0: []})
    intake = Intake(consumer, 4)  # type: ignore[arg-type]
    async with intake.committing():
        intake.tracker.started(TP0, 0)
        intake.tracker.started(TP0, 1)
        intake.committable(TP0, 0)
        await asyncio.sleep(0.01)  # the background commit of offset 1 is under way
        intake.committable(TP0, 1)
        revoking = asyncio.create_task(intake.listener.on_partitions_revoked({TP0}))
        await asyncio.sleep(0.05)
        assert not revoking.done()  # the partition does not go before its commit
        consumer.gate.set()
        await asyncio.wait_for(revoking, 2)
    assert consumer.commits == [{TP0: 1}, {TP0: 2}]  # in order, the later one last
    assert intake.tracker.committable() == {}  # forgotten


@pytest.mark.parametrize("how", ["cancel", "drain"])
async def test_what_the_background_has_not_committed_is_committed_as_the_worker_stops(
        how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commits_module, "COMMIT_INTERVAL_S", 60.0)
    consumer = FakeConsumer({TP0: records(*(dispatch("unit.ok", workflow_id=f"w{i}")
                                            for i in range(3)))})
    producer = FakeProducer()
    worker = Worker(settings(concurrency=1, drain_s=5))
    intake = Intake(consumer, 1)  # type: ignore[arg-type]
    served = asyncio.create_task(worker.serve(intake, await outbox(producer)))
    try:
        await wait_until(lambda: len(outcomes(producer)) == 3 and not worker.running)
        assert consumer.committed == {TP0: 1}  # the first commit; the next is a minute off
    finally:
        if how == "cancel":
            served.cancel()
        else:
            worker.stop()
        await asyncio.wait([served], timeout=5)
    assert served.done()
    assert consumer.committed == {TP0: 3}
    assert consumer.left == (how == "drain")
