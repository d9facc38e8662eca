"""A free slot takes the waiting dispatch of the highest effective priority
(``intake`` over ``held``): its band (the priority topic it came from) plus one for each
``aging_s`` it waited, within each partition in offset order; what is held while every
slot is busy stays bounded."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition
from worker_fakes import FakeConsumer, Record, dispatch, records

from headwater.topics import Topics
from services.worker import intake as intake_module
from services.worker.held import Held, Ranking
from services.worker.intake import Intake

TOPICS = Topics("t")
LOW = TopicPartition(TOPICS.priority("unit", 2), 0)
HIGH = TopicPartition(TOPICS.priority("unit", 8), 0)
PLAIN = TopicPartition(TOPICS.tasks("unit"), 0)
T0 = 1_700_000_000_000


def _consumer() -> FakeConsumer:
    """Three low dispatches, then one of the default band 5 s later, then two high
    ones 10 s after the first."""
    return FakeConsumer({
        LOW: records(*(dispatch("unit.ok", workflow_id=f"low{i}", at_ms=T0 + i)
                       for i in range(3)), topic=LOW.topic),
        PLAIN: records(dispatch("unit.ok", workflow_id="plain", at_ms=T0 + 5_000),
                       topic=PLAIN.topic),
        HIGH: records(*(dispatch("unit.ok", workflow_id=f"high{i}", at_ms=T0 + 10_000 + i)
                        for i in range(2)), topic=HIGH.topic)})


async def _order(intake: Intake) -> list[tuple[str, int]]:
    """Take one at a time, releasing each, until nothing is left."""
    out: list[tuple[str, int]] = []
    for _ in range(10):
        taken = await intake.take()
        for tp, record in taken:
            out.append((tp.topic.rsplit(".", 1)[-1], record.offset))
            intake.committable(tp, record.offset)
            intake.release()
    return out


async def test_higher_bands_go_first_each_partition_in_offset_order() -> None:
    intake = Intake(_consumer(), 1, Ranking(TOPICS, aging_s=60),  # type: ignore[arg-type]
                    clock_ms=lambda: T0 + 11_000)
    assert await _order(intake) == [("8", 0), ("8", 1), ("unit", 0),
                                    ("2", 0), ("2", 1), ("2", 2)]
    await intake.commit()
    assert intake.consumer.committed == {LOW: 3, PLAIN: 1, HIGH: 2}


async def test_a_low_dispatch_that_waited_long_enough_goes_before_a_high_one() -> None:
    # Aging of 1 s a band: the low ones waited 11 s (2 + 11 = 13), the high ones 1 s
    # (8 + 1 = 9), the plain one 6 s (5 + 6 = 11).
    intake = Intake(_consumer(), 1, Ranking(TOPICS, aging_s=1),  # type: ignore[arg-type]
                    clock_ms=lambda: T0 + 11_000)
    assert await _order(intake) == [("2", 0), ("2", 1), ("2", 2), ("unit", 0),
                                    ("8", 0), ("8", 1)]


async def test_without_a_ranking_the_oldest_goes_first() -> None:
    intake = Intake(_consumer(), 1, clock_ms=lambda: T0 + 11_000)  # type: ignore[arg-type]
    assert [t for t, _ in await _order(intake)] == ["2", "2", "2", "unit", "8", "8"]


async def test_what_is_held_while_busy_stays_bounded_and_its_partitions_paused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intake_module, "LOOKAHEAD", 4)
    monkeypatch.setattr(intake_module, "BUSY_POLL_S", 0.001)
    consumer = FakeConsumer({
        LOW: records(*(dispatch("unit.ok", at_ms=T0) for _ in range(50)), topic=LOW.topic),
        HIGH: []})
    intake = Intake(consumer, 1, Ranking(TOPICS, 60))  # type: ignore[arg-type]
    assert [r.offset for _, r in await intake.take()] == [0]
    for _ in range(20):  # busy: each poll keeps the member in its group
        assert await intake.take() == []
        assert len(intake.held) <= 2 * intake.lookahead
    assert LOW in consumer.paused() and HIGH not in consumer.paused()  # HIGH holds none
    consumer.log[HIGH] = records(dispatch("unit.ok", workflow_id="h", at_ms=T0 + 1),
                                 topic=HIGH.topic)
    assert await intake.take() == []  # busy: the high one is fetched and held
    assert HIGH in consumer.paused() and len(intake.held) <= 2 * intake.lookahead
    intake.release()
    taken = await intake.take()
    assert [(tp, r.offset) for tp, r in taken] == [(HIGH, 0)]


def test_held_records_are_chosen_by_rank_then_age_and_dropped_with_their_offsets() -> None:
    held: Held[str, Record] = Held(lambda r, now: 0.0)  # every rank equal: oldest first
    held.add({"a": [Record(7, None, timestamp=20), Record(8, None, timestamp=5)],
              "b": [Record(3, None, timestamp=10)]})
    assert len(held) == 3 and held.partitions() == {"a", "b"}
    first = held.pop_best(0)
    assert first is not None and (first[0], first[1].offset) == ("b", 3)
    second = held.pop_best(0)  # "a"'s 8 is older, but 7 comes first in its partition
    assert second is not None and (second[0], second[1].offset) == ("a", 7)
    assert held.drop() == {"a": 8} and len(held) == 0 and held.pop_best(0) is None


def test_a_topic_holds_its_band() -> None:
    ranking = Ranking(TOPICS, aging_s=10)
    assert [ranking.band(t) for t in (LOW.topic, HIGH.topic, PLAIN.topic,
                                      TOPICS.needs("unit", ["gpu"]))] == [2, 8, 5, 5]
    assert ranking(Record(0, None, topic=LOW.topic, timestamp=T0), T0 + 20_000) == 4.0
