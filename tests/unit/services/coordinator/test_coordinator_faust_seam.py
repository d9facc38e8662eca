"""The faust seam's workarounds (``services/coordinator/faust_seam/``), numbered as in its
docstring: for each, a test against the real faust-streaming, mode or aiokafka that
FAILS when the library stops behaving the way the workaround answers (then the
workaround can go), and tests of the workaround itself. No broker: the library's code is
called on stand-ins for what it would reach over the network."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
import signal
from collections import defaultdict
from types import SimpleNamespace
from typing import Any

import faust
import orjson
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.consumer.group_coordinator import GroupCoordinator
from faust.transport.consumer import Consumer
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread
from faust.types import TP
from intervaltree import IntervalTree
from mode.threads import ServiceThread

from services.coordinator import changelog
from services.coordinator.faust_seam import app as seam
from services.coordinator.faust_seam import inputs as seam_inputs
from services.coordinator.faust_seam import take
from services.coordinator.keys import entry_partition, intent_key, table_entry_key
from services.coordinator.records import InputRecord
from services.coordinator.settings import Settings

SETTINGS = dataclasses.replace(Settings.from_env(), store="memory://")  # its own table


class Ended(BaseException):
    """The process ended here (``end_process``, ``exit_now``): nothing after it runs."""


@pytest.fixture
async def app() -> faust.App:
    """A coordinator's faust app, never started (no broker is reached); made on the
    tests' event loop, as faust takes the running one."""
    return seam.build_app(SETTINGS, 10.0)


# 1. Agent concurrency 1 (faust-streaming issue #606).

def test_faust_commits_over_an_event_in_flight_at_the_head_of_the_acked_ones() -> None:
    """The reproduction of faust-streaming #606 (and of its fix, PR #707): offset 2585 is
    the next to commit and still being processed by one actor, another acked 2586..2589.
    faust commits 2590, over 2585. When this returns None, concurrency above 1 is safe."""
    tp = TP("t", 0)
    consumer = SimpleNamespace(_acked=defaultdict(list, {tp: [2586, 2587, 2588, 2589]}),
                               _acked_index=defaultdict(set, {tp: {2586, 2587, 2588, 2589}}),
                               _gap=defaultdict(IntervalTree),
                               _committed_offset=defaultdict(lambda: None, {tp: 2585}))
    assert Consumer._new_offset(consumer, tp) == 2590  # type: ignore[arg-type]


async def test_the_input_agent_runs_one_actor(app: faust.App) -> None:
    async def apply(records: list[InputRecord]) -> None:
        return None

    watch = seam_inputs.InputWatch(app, SETTINGS, 30.0)
    seam_inputs.add_input_agent(app, SETTINGS, watch, apply, 1.0)
    [agent] = app.agents.values()
    assert agent.concurrency == 1


# 2. The batch acknowledged in take_events' finally.

class Stream:
    """A real faust stream on an in-memory channel, its acks recorded."""

    def __init__(self) -> None:
        self.app = faust.App("unit-seam", broker="kafka://127.0.0.1:1", web_enabled=False)
        self.app.flow_control.resume()
        self.channel = self.app.channel(key_type=bytes, value_type=bytes, maxsize=10)
        self.stream: Any = self.channel.stream()
        self.acked: list[bytes] = []

        async def ack(event: Any) -> bool:
            self.acked.append(event.value)
            return True

        self.stream.ack = ack  # type: ignore[method-assign]

    async def batches(self, values: list[bytes]) -> tuple[Any, Any]:
        """``take_events``' generator and its first batch, holding ``values`` (handed out
        once full, however slowly they come)."""
        batches = self.stream.take_events(len(values), 10.0)
        first = asyncio.ensure_future(batches.__anext__())
        await asyncio.sleep(0.05)  # take_events subscribes to the channel on first use
        for value in values:
            await self.channel.send(value=value)
        return batches, await asyncio.wait_for(first, 5.0)


@pytest.fixture
async def stream() -> Any:
    s = Stream()
    yield s
    await s.stream.stop()


async def test_take_events_acks_a_batch_only_once_its_generator_is_closed(
        stream: Stream) -> None:
    """Not when it is handed out: ``aclose`` is what acknowledges a finished batch at once
    (otherwise it waits for the generator's collection)."""
    batches, batch = await stream.batches([b"a", b"b", b"c"])
    assert [e.value for e in batch] == [b"a", b"b", b"c"] and stream.acked == []
    await batches.aclose()
    assert stream.acked == [b"a", b"b", b"c"]


async def test_take_events_acks_a_batch_whose_loop_body_raised(stream: Stream) -> None:
    """The hazard: an exception thrown into the loop still acknowledges the batch, so a
    batch that failed half-way must end the process before the generator's ``finally``."""
    batches, _ = await stream.batches([b"a", b"b"])
    with pytest.raises(RuntimeError):
        await batches.athrow(RuntimeError("half-way"))
    assert stream.acked == [b"a", b"b"]


class Watch:
    """``InputWatch.admit`` without offsets to check."""

    def admit(self, events: list[Any]) -> list[InputRecord]:
        return [InputRecord("t", 0, i, None, e.value, []) for i, e in enumerate(events)]


async def test_a_batch_that_fails_half_way_ends_the_process_before_its_ack(
        stream: Stream, monkeypatch: pytest.MonkeyPatch) -> None:
    acked_at_the_end: list[list[bytes]] = []

    def end_process(app: Any, reason: str) -> None:
        acked_at_the_end.append(list(stream.acked))
        raise Ended(reason)

    async def apply(records: list[InputRecord]) -> None:
        raise OSError("the broker went away")

    monkeypatch.setattr(seam_inputs, "end_process", end_process)
    batches = take.batches(stream.stream, 10, 0.05)
    consuming = asyncio.ensure_future(seam_inputs.consume_batches(
        stream.app, batches, Watch(), apply, 1.0))  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    await stream.channel.send(value=b"a")
    with pytest.raises(Ended, match="a batch failed half-way"):
        await asyncio.wait_for(consuming, 5.0)
    assert acked_at_the_end == [[]]


async def test_a_finished_batch_is_acked_when_the_next_is_taken(stream: Stream) -> None:
    applied: list[list[bytes | None]] = []

    async def apply(records: list[InputRecord]) -> None:
        applied.append([r.value for r in records])

    batches = take.batches(stream.stream, 10, 0.05)
    consuming = asyncio.ensure_future(seam_inputs.consume_batches(
        stream.app, batches, Watch(), apply, 1.0))  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    await stream.channel.send(value=b"a")
    async def acked() -> None:
        while not stream.acked:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(acked(), 5.0)
    assert applied == [[b"a"]] and stream.acked == [b"a"]
    consuming.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await consuming


# 3. The SIGTERM override (CoordinatorWorker).

@pytest.fixture
async def worker(app: faust.App) -> seam.CoordinatorWorker:
    return seam.CoordinatorWorker(app, loglevel="warn", redirect_stdouts=False)


async def test_modes_worker_ignores_a_second_signal(worker: seam.CoordinatorWorker) -> None:
    worker._signal_stop_time = 1.0  # the first signal's
    faust.Worker._on_sigterm(worker)
    assert worker._signal_stop_future is None  # no stop scheduled, no exit


async def test_a_second_signal_exits_the_coordinator_at_once(
        worker: seam.CoordinatorWorker, monkeypatch: pytest.MonkeyPatch) -> None:
    def exit_now(reason: str, status: int = 70) -> None:
        raise Ended(reason, status)

    monkeypatch.setattr(seam, "exit_now", exit_now)
    worker._signal_stop_time = 1.0
    with pytest.raises(Ended) as ended:
        worker._on_sigterm()
    assert ended.value.args == ("a second SIGTERM while stopping", 128 + signal.SIGTERM)


# 4. Start offsets.

async def test_aiokafka_does_not_seek_a_partition_committed_at_0() -> None:
    committed = {TopicPartition("t", 0): 0, TopicPartition("t", 1): None,
                 TopicPartition("t", 2): 7}
    seeks: list[tuple[Any, int]] = []

    async def committed_offset(tp: Any) -> int | None:
        return committed[tp]

    consumer = SimpleNamespace(
        _subscription=SimpleNamespace(assigned_partitions=lambda: set(committed)),
        committed=committed_offset,
        _fetcher=SimpleNamespace(seek_to=lambda tp, offset: seeks.append((tp, offset))))
    await AIOKafkaConsumer.seek_to_committed(consumer, *committed)
    assert seeks == [(TopicPartition("t", 2), 7)]


async def test_faust_takes_a_committed_offset_of_0_for_none() -> None:
    async def seek_to_committed() -> dict[Any, int]:
        return {TP("t", 0): 0, TP("t", 2): 7}

    consumer = SimpleNamespace(_read_offset={}, _committed_offset={},
                               seek_to_committed=seek_to_committed)
    await Consumer.perform_seek(consumer)  # type: ignore[arg-type]
    assert consumer._committed_offset == {TP("t", 0): None, TP("t", 2): 7}


async def test_partitions_committed_at_0_or_not_at_all_are_sought_to_their_first_offset(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assigned = [TP("p.reports", 0), TP("p.reports", 1), TP("p.control", 3)]
    seeks: list[tuple[Any, int]] = []

    async def committed_offsets(settings: Any, group: str, tps: Any) -> dict[Any, int]:
        return {("p.reports", 0): 0, ("p.control", 3): 12}

    async def earliest_offsets(*tps: Any) -> dict[Any, int]:
        return {tp: 5 for tp in tps}

    async def seek(tp: Any, offset: int) -> None:
        seeks.append((tp, offset))

    monkeypatch.setattr(seam_inputs, "committed_offsets", committed_offsets)
    app = SimpleNamespace(consumer=SimpleNamespace(earliest_offsets=earliest_offsets,
                                                   seek=seek, _committed_offset={}))
    start = await seam_inputs.start_offsets(app, SETTINGS, assigned)
    assert start == {("p.reports", 0): 5, ("p.reports", 1): 5, ("p.control", 3): 12}
    assert seeks == [(TP("p.reports", 0), 5), (TP("p.reports", 1), 5)]


async def test_a_failed_commit_counts_as_done_in_faust_and_the_start_undoes_it(
        app: faust.App, monkeypatch: pytest.MonkeyPatch) -> None:
    """faust's ``commit`` records the offsets even when ``_commit`` failed; the group then
    holds less than faust thinks, and faust would never commit the records between.
    ``start_offsets`` sets faust's record to what the group holds."""
    consumer = app.consumer
    tp = TP("p.reports", 0)

    async def failed_commit(offsets: Any) -> bool:
        return False

    monkeypatch.setattr(consumer, "_commit", failed_commit)
    monkeypatch.setattr(consumer, "assignment", lambda: {tp})
    monkeypatch.setattr(app.producer, "flush", lambda: asyncio.sleep(0))
    assert await consumer._commit_offsets({tp: 40}) is False
    assert consumer._committed_offset[tp] == 40  # faust's view: committed, though it failed

    async def committed_offsets(settings: Any, group: str, tps: Any) -> dict[Any, int]:
        return {("p.reports", 0): 31}  # what the group really holds

    monkeypatch.setattr(seam_inputs, "committed_offsets", committed_offsets)
    await seam_inputs.start_offsets(app, SETTINGS, [tp])
    assert consumer._committed_offset[tp] == 31
    assert consumer._should_commit(tp, 35)  # records 31..39 will be committed again


# 5. Offset continuity, hooked to faust's events (no library test: see the seam).

def _event(topic: str, partition: int, offset: int) -> Any:
    return SimpleNamespace(message=SimpleNamespace(topic=topic, partition=partition,
                                                   offset=offset, key=b"k", value=b"v",
                                                   headers=None))


def test_a_skipped_offset_ends_the_process_before_the_batch_is_applied(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def end_process(app: Any, reason: str) -> None:
        raise Ended(reason)

    monkeypatch.setattr(seam_inputs, "end_process", end_process)
    watch = seam_inputs.InputWatch(SimpleNamespace(), SETTINGS, 30.0)
    records = watch.admit([_event("r", 0, 4), _event("r", 0, 5)])
    assert [(r.offset, r.headers) for r in records] == [(4, []), (5, [])]
    with pytest.raises(Ended, match=r"r\[0\]: offsets 6..7 were skipped"):
        watch.admit([_event("r", 0, 8)])
    watch.revoked([TP("r", 0)])
    assert [r.offset for r in watch.admit([_event("r", 0, 8)])] == [8]


# 6. Leaving the group through aiokafka's private internals.

def test_aiokafka_has_no_public_way_to_leave_a_group_alone() -> None:
    """Only ``stop`` and ``unsubscribe`` leave, along with the rest they do. When this
    fails, aiokafka grew a call of its own: use it in ``leave_group``."""
    public = [name for name in dir(AIOKafkaConsumer) if not name.startswith("_")]
    assert [name for name in public if "leave" in name or "group" in name] == []


def test_the_internals_leave_group_reaches_are_there() -> None:
    assert inspect.iscoroutinefunction(GroupCoordinator._maybe_leave_group)
    assert callable(AIOKafkaConsumerThread._ensure_consumer)
    assert "thread_loop" in inspect.signature(ServiceThread.__init__).parameters


def test_leave_group_is_best_effort(caplog: pytest.LogCaptureFixture) -> None:
    assert seam.leave_group(SimpleNamespace(consumer=None)) is False
    assert "could not leave the consumer group" in caplog.text


# 7. The root logger level.

async def test_fausts_worker_leaves_the_root_logger_at_debug(
        worker: seam.CoordinatorWorker) -> None:
    root = logging.Logger("probe")  # stands for the root logger mode's worker sets up
    root.addHandler(logging.NullHandler())
    worker.on_setup_root_logger(root, logging.WARNING)
    assert root.level == logging.DEBUG


async def test_quiet_logging_raises_the_root_logger_to_warning(app: faust.App) -> None:
    seam.quiet_logging(app)
    root, before = logging.getLogger(), logging.getLogger().level
    try:
        root.setLevel(logging.DEBUG)
        await app._app_tasks[-1]()
        assert root.level == logging.WARNING
        assert logging.getLogger("headwater").level == logging.INFO
    finally:
        root.setLevel(before)


# 8. Table writes that bypass faust's own.

async def test_a_faust_table_write_outside_a_stream_raises(app: faust.App) -> None:
    table = app.Table("plain", key_type=bytes, value_type=bytes, partitions=4)
    with pytest.raises(TypeError, match="outside of stream iteration"):
        table[b"k"] = b"v"


async def test_a_faust_table_write_drops_its_changelog_future(app: faust.App) -> None:
    table = seam.add_table(app, "workflows", 4)
    sent = SimpleNamespace(message=SimpleNamespace(partition=0))
    table.send_changelog = lambda *args, **kwargs: sent  # type: ignore[method-assign,assignment]
    # Nothing to await before committing:
    assert table.on_key_set(b"k", b"v") is None  # type: ignore[func-returns-value]


async def test_changelog_write_sends_every_entry_in_order_to_its_partition(
        app: faust.App) -> None:
    table = seam.add_table(app, "workflows", 4)
    sent: list[tuple[Any, ...]] = []
    persisted: list[tuple[Any, int]] = []

    class Producer:
        async def send(self, *args: Any) -> Any:
            sent.append(args)
            done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            done.set_result(SimpleNamespace(partition=args[3], offset=len(sent) * 10))
            return done

    app.producer = Producer()  # type: ignore[assignment]
    table.data.set_persisted_offset = (  # type: ignore[method-assign]
        lambda tp, offset: persisted.append((tp, offset)))
    key = table_entry_key("wf-1", "a")
    done = changelog.write(table, [(key, b"v"), (intent_key(5), None), (key, b"w")])
    assert seam.read_entry(table, key) == b"w"  # the local store at once, before the broker
    await done
    topic = table.changelog_topic.get_topic_name()
    p = entry_partition(key, 4)
    assert p == 2
    assert sent == [(topic, key, b"v", 2, None, None), (topic, intent_key(5), None, 1, None, None),
                    (topic, key, b"w", 2, None, None)]
    assert sorted(persisted) == [(TP(topic, 1), 20), (TP(topic, 2), 30)]  # each one's highest



def test_the_memory_store_keeps_a_copy_of_each_value() -> None:
    """orjson's output keeps its 4 KiB starting buffer; the store keeps a copy the size
    of the content (``changelog.kept``): equal, and another object."""
    value = orjson.dumps({"status": "succeeded", "seq": 3})
    kept = changelog.kept(value)
    assert kept == value and kept is not value and type(kept) is bytes

# 9. The recovery hook.

async def test_fausts_recovery_callbacks_get_no_partitions(app: faust.App) -> None:
    table = app.Table("plain", key_type=bytes, value_type=bytes, partitions=4)
    calls: list[tuple[Any, ...]] = []

    @table.on_recover
    async def recovered(*args: Any) -> None:
        calls.append(args)

    await table.call_recover_callbacks()
    assert calls == [()]


async def test_the_workflow_table_hands_its_hook_the_recovered_partitions(
        app: faust.App) -> None:
    table = seam.add_table(app, "workflows", 4)
    seen: list[set[int]] = []

    async def on_recovered(partitions: set[int]) -> None:
        seen.append(partitions)

    table.on_recovered = on_recovered
    await table.on_recovery_completed({TP("x-workflows-changelog", 3)}, set())
    assert seen == [{3}]


# 12. Offsets requests on a connection of their own (the wait they avoid needs a broker
# to show: tests/e2e/test_faust_seam.py).

async def test_the_consumer_asks_for_offsets_through_a_client_of_its_own(
        app: faust.App) -> None:
    asked: list[tuple[str, list[TopicPartition]]] = []

    class Client:
        async def start(self) -> None:
            asked.append(("started", []))

        async def stop(self) -> None:
            asked.append(("stopped", []))

        async def beginning_offsets(self, tps: list[TopicPartition]) -> dict[Any, int]:
            asked.append(("first", tps))
            return {tp: 10 + tp.partition for tp in tps}

        async def end_offsets(self, tps: list[TopicPartition]) -> dict[Any, int]:
            asked.append(("next", tps))
            return {tp: 20 + tp.partition for tp in tps}

    seam.offsets_on_own_connection(app, Client)
    tps = [TP("a", 0), TP("a", 1), TP("b", 0)]
    earliest = await app.consumer.earliest_offsets(*tps)
    assert earliest == {TP("a", 0): 10, TP("a", 1): 11, TP("b", 0): 10}
    assert [type(tp) for tp in earliest] == [TP, TP, TP]  # keyed as faust asked
    assert await app.consumer.highwaters(*tps) == {TP("a", 0): 20, TP("a", 1): 21, TP("b", 0): 20}
    wanted = [TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)]
    assert asked == [("started", []), ("first", wanted), ("stopped", []),
                     ("started", []), ("next", wanted), ("stopped", [])]
    assert await app.consumer.highwaters() == {} and len(asked) == 6  # no client for none
