"""Records on another partition than their workflow's (``homing``): submissions and
control records are moved home with a ``moved-from`` header, reports are dead-lettered;
a coordinator killed before the move's ack moves it again, and a copy moved twice changes
nothing. ``BatchApplier`` over the in-memory table of ``test_coordinator_redelivery``,
whose every key is on partition 0."""

from __future__ import annotations

import dataclasses
import logging
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from headwater import codec
from headwater.core import events as ev
from headwater.topics import CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE
from services.common.kafka.client import AVRO_HEADERS
from services.common.settings import CommonSettings
from services.coordinator import homing
from services.coordinator.batch import BatchApplier
from services.coordinator.bus import FaustBus
from services.coordinator.faust_seam.app import record_bytes
from services.coordinator.records import InputRecord
from services.coordinator.timers import TimerIndex
from tests.unit.services.coordinator.test_coordinator_redelivery import (
    AT,
    SPEC,
    TOPICS,
    WF,
    DeadBus,
    Killed,
    Table,
)

WAIT_SPEC = {"name": "gate", "nodes": [{"id": "w", "kind": "wait", "signal": "go"},
                                       {"id": "f", "task": "t.f", "needs": ["w"]}]}


class MovingBus(DeadBus):
    """Keeps what it published, dead-lettered and sent to a partition (the moves); dies
    on the first ``die`` sends, before the broker acknowledges them."""

    def __init__(self, die: int = 0) -> None:
        super().__init__()
        self.sent: list[InputRecord] = []
        self.die = die

    async def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int,
                   headers: list[tuple[str, bytes]]) -> Any:
        if self.die:
            self.die -= 1
            raise Killed("before the ack")
        self.sent.append(InputRecord(topic, partition, len(self.sent), key, value, headers))

        async def ack() -> None:
            return None

        return ack()

    def too_large(self, key: bytes | None, value: bytes | None,
                  headers: list[tuple[str, bytes]]) -> str | None:
        return None  # the size check is FaustBus's: test_a_move_that_would_not_fit_...


def applier(bus: MovingBus, table: Table) -> BatchApplier:
    return BatchApplier(TOPICS, bus, table, TimerIndex(), 16 << 20)


def submission(partition: int = 1, offset: int = 7, spec: Any = SPEC) -> InputRecord:
    return InputRecord(TOPICS.submissions, partition, offset, WF.encode(),
                       codec.encode(ev.WorkflowSubmitted(WF, spec, {}, AT)), list(AVRO_HEADERS))


def json_signal(partition: int, offset: int) -> InputRecord:
    doc = {"workflow_id": WF, "name": "go", "at_ms": AT, "signal_id": "s-1"}
    return InputRecord(TOPICS.control, partition, offset, WF.encode(), orjson.dumps(doc),
                       [(CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE.encode())])


async def test_a_submission_elsewhere_is_moved_home_with_where_it_was(
        caplog: pytest.LogCaptureFixture) -> None:
    bus, table = MovingBus(), Table()
    before = homing.MOVED.total
    with caplog.at_level(logging.INFO, logger="services.coordinator.homing"):
        await applier(bus, table).apply_batch([submission()])
    [moved] = bus.sent
    original = submission()
    assert (moved.topic, moved.partition, moved.key, moved.value) == (
        TOPICS.submissions, 0, original.key, original.value)
    assert moved.headers == [*AVRO_HEADERS, ("moved-from", f"{TOPICS.submissions}/1/7".encode())]
    assert bus.dead == [] and bus.records == [] and table.load(WF) is None, "skipped here"
    assert homing.MOVED.total == before + 1
    [line] = [r.getMessage() for r in caplog.records if r.name.endswith("homing")]
    assert line.startswith(f"moved {TOPICS.submissions}/1/7 (key '{WF}') from partition 1 to "
                           "its home partition 0")
    await applier(bus, table).apply_batch([moved])  # read on its home partition: applied
    assert [e.type for e in bus.events()][:1] == ["WorkflowAccepted"]


async def test_a_json_signal_elsewhere_keeps_its_headers() -> None:
    bus, table = MovingBus(), Table()
    await applier(bus, table).apply_batch([json_signal(partition=1, offset=3)])
    [moved] = bus.sent
    assert moved.headers[0] == (CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE.encode())
    assert moved.value == json_signal(1, 3).value and moved.partition == 0


async def test_a_report_elsewhere_is_dead_lettered_not_moved() -> None:
    bus, table = MovingBus(), Table()
    report = InputRecord(TOPICS.reports, 1, 0, WF.encode(),
                         codec.encode(ev.TaskStarted(WF, "f", None, 1, AT, "w-1")), [])
    await applier(bus, table).apply_batch([report])
    [dead] = bus.dead
    assert bus.sent == [] and dead.reason.startswith(
        f"{TOPICS.reports}[1] holds a record of workflow '{WF}', whose records belong on "
        "partition 0")


async def test_a_record_moved_once_and_still_elsewhere_is_dead_lettered() -> None:
    """The topic has more partitions than the coordinator counts: no move round for ever."""
    bus, table = MovingBus(), Table()
    again = submission()
    again = InputRecord(again.topic, 2, 0, again.key, again.value,
                        [*again.headers, ("moved-from", b"x.submissions/1/7")])
    await applier(bus, table).apply_batch([again])
    [dead] = bus.dead
    assert bus.sent == [] and "it was moved from x.submissions/1/7 already" in dead.reason


async def test_a_kill_before_the_ack_loses_no_move() -> None:
    """The batch fails (the process dies, nothing is committed): the record comes again
    and is moved then."""
    bus, table = MovingBus(die=1), Table()
    with pytest.raises(Killed):
        await applier(bus, table).apply_batch([submission()])
    assert bus.sent == []
    await applier(bus, table).apply_batch([submission()])
    assert [m.partition for m in bus.sent] == [0]


async def test_a_submission_and_a_signal_moved_twice_change_nothing_the_second_time(
        ) -> None:
    """Killed after the moves' acks but before the commit: both are moved again. On the
    home partition the second submission is the same run (no conflict, nothing new) and
    the second signal, of the same ``signal_id``, is taken once."""
    bus, table = MovingBus(), Table()
    batch = [submission(offset=7, spec=WAIT_SPEC), json_signal(partition=1, offset=8)]
    await applier(bus, table).apply_batch(batch)
    await applier(bus, table).apply_batch(batch)  # redelivered: not committed
    assert len(bus.sent) == 4 and bus.dead == []
    home = [InputRecord(m.topic, 0, i, m.key, m.value, m.headers)
            for i, m in enumerate(bus.sent)]
    for record in home:
        await applier(bus, table).apply_batch([record])
    assert [e.type for e in bus.events()] == ["WorkflowAccepted", "WaitStarted", "SignalSent",
                                             "SignalConsumed", "NodeFinished", "TaskDispatched"]
    assert bus.dead == [], [d.reason for d in bus.dead]
    state = table.load(WF)
    assert state is not None and state.signal_ids == ["s-1"]


async def test_the_faust_bus_sends_a_move_to_its_partition_with_its_headers() -> None:
    """What ``FaustBus.send`` hands the app's producer: the home partition, no timestamp,
    the moved record's own headers (not the Avro content type of the bus's outputs)."""
    sent: list[tuple[Any, ...]] = []

    class Producer:
        async def send(self, *args: Any) -> Any:
            sent.append(args)

            async def ack() -> None:
                return None

            return ack()

    app = SimpleNamespace(producer=Producer(), topic=lambda name, **kw: name)
    move = homing.Move(json_signal(partition=5, offset=9), home=2)
    await homing.carry_out(FaustBus(app, CommonSettings(**CommonSettings.common_from_env())),
                           [move])
    assert sent == [(TOPICS.control, WF.encode(), move.record.value, 2, None,
                     [(CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE.encode()),
                      ("moved-from", f"{TOPICS.control}/5/9".encode())])]


def faust_bus(max_message_bytes: int) -> tuple[FaustBus, list[tuple[Any, ...]],
                                               list[dict[str, Any]]]:
    """A ``FaustBus`` over a fake app: what it sends to a partition, and to the DLQ."""
    sent: list[tuple[Any, ...]] = []
    dead: list[dict[str, Any]] = []

    async def ack() -> None:
        return None

    class Producer:
        async def send(self, *args: Any) -> Any:
            sent.append(args)
            return ack()

    class Topic:
        async def send(self, **kwargs: Any) -> Any:
            dead.append(kwargs)
            return ack()

    app = SimpleNamespace(producer=Producer(), topic=lambda name, **kw: Topic())
    settings = dataclasses.replace(CommonSettings(**CommonSettings.common_from_env()),
                                   max_message_bytes=max_message_bytes)
    return FaustBus(app, settings), sent, dead


async def test_a_move_that_would_not_fit_goes_to_the_dlq_with_the_reason() -> None:
    """A record just under the size limit fits where it was but not with ``moved-from``:
    the producer would refuse it (``MessageSizeTooLargeError``), failing every batch."""
    move = homing.Move(submission(partition=1, offset=7), home=0)
    record = move.record
    limit = record_bytes(record.key, record.value, move.headers()) - 1
    assert record_bytes(record.key, record.value, record.headers) <= limit
    bus, sent, dead = faust_bus(limit)
    await homing.carry_out(bus, [move])
    assert sent == [], "not re-produced"
    [letter] = dead
    reason = dict(letter["headers"])["reason"].decode()
    assert reason.startswith(f"{TOPICS.submissions}[1] holds a record of workflow '{WF}'"), reason
    assert reason.endswith(f"it cannot be moved there: with its moved-from header it is "
                           f"{limit + 1} bytes, over HEADWATER_MAX_MESSAGE_BYTES ({limit})")
    assert letter["key"] == WF.encode()


async def test_a_move_that_fits_is_sent_beside_one_that_does_not() -> None:
    small = homing.Move(json_signal(partition=5, offset=9), home=0)
    big = homing.Move(submission(partition=1, offset=7, spec={**SPEC, "pad": "x" * 5000}),
                      home=0)
    bus, sent, dead = faust_bus(record_bytes(big.record.key, big.record.value,
                                             big.record.headers))
    await homing.carry_out(bus, [big, small])
    assert [s[3] for s in sent] == [0] and sent[0][2] == small.record.value
    [letter] = dead  # without its value: with the DLQ's headers it would not fit either
    assert dict(letter["headers"])["source-offset"] == b"7" and letter["key"] == WF.encode()


async def test_each_move_is_logged_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """The coordinator logs at WARNING by default: a producer partitioning by another hash
    is worth seeing."""
    bus, _, _ = faust_bus(16 << 20)
    with caplog.at_level(logging.WARNING, logger="services.coordinator.homing"):
        await homing.carry_out(bus, [homing.Move(json_signal(partition=5, offset=9), home=2)])
    [line] = [r for r in caplog.records if r.name.endswith("homing")]
    assert line.levelno == logging.WARNING
    assert line.getMessage().startswith(f"moved {TOPICS.control}/5/9 (key '{WF}')")
