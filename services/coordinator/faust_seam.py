"""The coordinator's seam with faust-streaming 0.15 (mode-streaming 0.7) and aiokafka 0.14:
the only module of the coordinator that imports them, and every workaround of theirs.

The rest of the coordinator wires an app, reads and writes a table, and applies batches
of ``records.InputRecord``. Each workaround names the behaviour it answers; the tests
that show it is still needed (``tests/unit/services/coordinator/
test_coordinator_faust_seam.py``; with a broker, ``tests/e2e/test_faust_seam.py``) fail
when the library stops behaving so, and then the workaround can go:

1. Agent concurrency 1 (``add_input_agent``): above 1, faust commits past an event still
   in flight (faust-streaming issue #606: ``Consumer._new_offset`` takes one unacked
   offset at the head of the acked ones for a gap, and commits over it).
2. The batch acknowledged in ``take_events``' ``finally`` (``consume_batches``): faust
   acks a batch when its generator moves on or is closed, also after the loop body raised
   or was cancelled. So a batch that failed half-way ends the process before that
   ``finally`` runs, a cancelled one is finished first (``finish``), and ``aclose``
   acknowledges a finished batch at once rather than when the generator is collected.
3. The SIGTERM override (``CoordinatorWorker``): mode's ``Worker`` ignores a second signal.
4. Start offsets (``start_offsets``; also faust's record of what was committed, which a
   failed commit corrupts): aiokafka's ``seek_to_committed`` and faust's
   ``perform_seek`` take a committed offset of 0 for none and do not seek.
5. Offset continuity (``InputWatch``): faust can skip input records around a rebalance
   (faust-streaming issues #216 and #236, closed upstream; still seen in the fault suite).
   The checks are ``continuity.OffsetContinuity``'s; the hookup is here. No unit test
   can show the skip (it takes a rebalance racing a full stream buffer); the fault suite
   (``tests/faults``) runs the hookup.
6. Leaving the group (``leave_group``): aiokafka has no call that only leaves (``stop``
   and ``unsubscribe`` leave as part of closing or dropping the subscription); a process
   about to exec or exit runs its ``GroupCoordinator``'s private ``_maybe_leave_group``.
7. The root logger level (``quiet_logging``): faust's worker sets the root logger to
   DEBUG for its spinner and filters in its handler.
8. Table writes (``changelog.write``, ``read_entry``, ``WorkflowTable.partition_for_key``):
   ``table[key] = value`` drops the changelog record's future and takes its partition
   from the current event; entries go to ``table.data`` and, past faust's producer
   buffer, to the app's producer (see ``changelog``).
9. The recovery hook (``WorkflowTable.on_recovery_completed``): faust's ``on_recover``
   callbacks are called with no partitions.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NoReturn, TypeAlias

import faust
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from services.common.finishing import Unfinished, finish
from services.common.kafka.client import committed_offsets
from services.common.kafka.security import faust_credentials
from services.coordinator.continuity import OffsetContinuity, offset_ranges
from services.coordinator.keys import entry_partition
from services.coordinator.records import InputRecord
from services.coordinator.settings import Settings
from services.coordinator.shutdown import exit_now, restart

log = logging.getLogger("headwater.coordinator")

FaustApp: TypeAlias = faust.App
"""The faust app, as the wiring names it."""
LEAVE_TIMEOUT_S = 2.0
"""How long ``leave_group`` waits for the group coordinator's answer, seconds."""


class CoordinatorWorker(faust.Worker):
    """faust's worker, logging the stop; a second SIGTERM or SIGINT exits at once (mode's
    ``Worker._schedule_shutdown`` ignores it).

    What faust does on the first signal, as observed with an instrumented coordinator (a
    batch held mid-way for seconds): ``App.stop`` pauses every partition and suspends
    flow control (events fetched from then on are skipped, not acknowledged), waits until
    every event a stream had taken is acknowledged (the batch in hand and the events
    ``take_events`` had buffered are applied to the end), commits, then stops the table
    manager, the agents (cancelling their tasks), the consumer (committing again and
    sending ``LeaveGroup``, so the group rebalances at once) and the producer (flushed);
    ``app.task`` coroutines (the projector) are cancelled; the process exits 0 about a
    second later. The agent's cancel cannot cut a batch (``add_input_agent``), and a batch
    that fails while stopping exits instead of restarting (``end_process``).
    """

    def _on_sigterm(self) -> None:
        self._on_signal(signal.SIGTERM)

    def _on_sigint(self) -> None:
        self._on_signal(signal.SIGINT)

    def _on_signal(self, sig: signal.Signals) -> None:
        if self._signal_stop_time:
            exit_now(f"a second {sig.name} while stopping", 128 + sig.value)
        log.warning("coordinator stopping (%s): finishing the batch in hand, committing, "
                    "leaving the group; a second signal exits at once", sig.name)
        self._stopping_since = time.monotonic()
        if sig is signal.SIGTERM:
            super()._on_sigterm()
        else:
            super()._on_sigint()

    def stop_and_shutdown(self) -> None:
        """faust's stop, then a line saying how long it took."""
        super().stop_and_shutdown()
        since = getattr(self, "_stopping_since", None)
        if since is not None:
            log.warning("coordinator stopped %.1f s after the signal", time.monotonic() - since)


PRODUCER_BATCH_BYTES = 1 << 20
"""aiokafka's ``max_batch_size`` for the coordinator's producer, bytes: a batch's records
for one partition fit one producer batch (the default, 16 KiB, makes a large batch wait
for a round trip per 16 KiB: aiokafka keeps one batch per partition in flight)."""


def build_app(settings: Settings, session_timeout_s: float) -> FaustApp:
    """The faust app of the coordinators' group (``settings.topics.coordinator_app_id``),
    raw keys and values, at-least-once, run by ``CoordinatorWorker``.

    Args:
        settings: the coordinator's settings.
        session_timeout_s: Kafka's ``session.timeout.ms`` of the group, seconds: a
            crashed coordinator's partitions move after it (faust's default is 60 s).
    """
    return faust.App(
        settings.topics.coordinator_app_id,
        broker=f"kafka://{settings.bootstrap}",
        broker_credentials=faust_credentials(settings.kafka_security),
        store=settings.store, datadir=settings.data_dir,
        topic_partitions=settings.partitions, topic_replication_factor=settings.replication,
        table_standby_replicas=0,
        processing_guarantee="at_least_once",
        producer_acks=-1,
        producer_max_request_size=settings.max_message_bytes,
        producer_max_batch_size=PRODUCER_BATCH_BYTES,
        consumer_max_fetch_size=settings.max_message_bytes,
        consumer_auto_offset_reset="earliest",
        web_enabled=False,
        broker_commit_interval=0.5,
        broker_session_timeout=session_timeout_s,
        broker_heartbeat_interval=3.0,
        consumer_group_instance_id=settings.instance_id,
        key_serializer="raw",
        value_serializer="raw",
        Worker=CoordinatorWorker,
    )


class WorkflowTable(faust.Table[bytes, bytes]):
    """A table whose entries are partitioned by their key (``keys.entry_partition``), not
    by the event being processed.

    ``on_recovered``, when set, is awaited with the partitions this process owns once
    faust has restored them from the changelog and before their input streams resume.
    """

    on_recovered: Callable[[set[int]], Awaitable[None]] | None = None

    async def on_recovery_completed(self, active_tps: set[Any], standby_tps: set[Any]) -> None:
        """faust's hook after recovery (``faust.tables.recovery``, before ``resume_flow``)."""
        await super().on_recovery_completed(active_tps, standby_tps)
        if self.on_recovered is not None:
            await self.on_recovered({tp.partition for tp in active_tps})

    def partition_for_key(self, key: Any) -> int | None:
        """The partition of a table key: a workflow's entries go where its input records
        do (Kafka's default partitioner of the workflow id); an intent's slot to its own."""
        partitions: int = self.partitions or self.app.conf.topic_partitions
        return entry_partition(bytes(key), partitions)


def add_table(app: FaustApp, name: str, partitions: int) -> WorkflowTable:
    """A ``WorkflowTable`` of raw bytes named ``name`` (its changelog is
    ``<app id>-<name>-changelog``), added to the app."""
    table = WorkflowTable(app, name=name, partitions=partitions, key_type=bytes,
                          value_type=bytes, beacon=app.tables.beacon, help="workflow snapshots")
    app.tables.add(table)
    return table


def read_entry(table: Any, key: bytes) -> bytes | None:
    """An entry of the table's local store, raw (no cache, no decoding)."""
    value: bytes | None = table.data.get(key)
    return value


def record_bytes(key: bytes | None, value: bytes | None,
                 headers: list[tuple[str, bytes]]) -> int:
    """The size aiokafka gives a record in a batch of its own (it refuses one over
    ``max_request_size``), bytes."""
    size: int = DefaultRecordBatchBuilder.estimate_size_in_bytes(key, value, headers)
    return size


def leave_group(app: Any, timeout_s: float = LEAVE_TIMEOUT_S) -> bool:
    """Send ``LeaveGroup`` for this process's member of the app's consumer group, from
    the consumer's own thread, and wait up to ``timeout_s`` for the answer. Blocks the
    calling thread: call it only right before the process ends or execs.

    Without it Kafka keeps the old member until its session times out (10 s): the fresh
    process's partitions are split with that ghost meanwhile, and its expiry rebalances
    the group a second time, across which faust can skip records and the coordinator
    restarts again (a loop seen in the fault suite: five restarts ten seconds apart).
    Static members (KIP-345) do not leave; aiokafka's graceful close does the same.

    Returns:
        Whether the request was answered; False (logged) when the consumer is not
        running, or the request failed or timed out.
    """
    try:
        thread = app.consumer._thread  # faust's AIOKafkaConsumerThread
        group = thread._ensure_consumer()._coordinator  # aiokafka's GroupCoordinator
        done = asyncio.run_coroutine_threadsafe(group._maybe_leave_group(),
                                                thread.thread_loop)
        done.result(timeout_s)
    except Exception as e:  # anything at all: the process ends right after
        log.warning("could not leave the consumer group: %s: %s", type(e).__name__, e)
        return False
    log.warning("left the consumer group")
    return True


def end_process(app: Any, reason: str) -> NoReturn:
    """Leave the group (so that the next owner need not wait for our session to expire),
    then exit if the app is stopping (SIGTERM: do not start over), else restart."""
    leave_group(app)
    if app.should_stop:
        exit_now(f"{reason}, while stopping")
    restart(reason)


async def start_offsets(app: Any, settings: Settings,
                        assigned: list[Any]) -> dict[tuple[str, int], int]:
    """Where each assigned input partition's records must start: the group's committed
    offset; for a partition without one (or at 0), its first offset, sought to here.

    aiokafka's ``seek_to_committed`` and faust's ``perform_seek`` both take a committed
    offset of 0 for none and do not seek such a partition, which then goes on from
    wherever the fetcher stood: records at its head were seen skipped in the fault suite
    (a coordinator started at offset 42 of a partition nobody had committed).

    faust's own idea of the committed offsets is set to the group's too: faust records
    a commit as done even when it failed (``Consumer.commit`` updates
    ``_committed_offset`` whatever ``_commit`` returned), and a failed commit that ends
    after a rebalance leaves an offset the group never committed; faust then never
    commits the redelivered records below it, and the partition is never idle again
    (seen in the fault suite with the broker SIGKILLed: 5 runs of 20 hung, 0 of 13 with
    this).
    """
    committed = await committed_offsets(settings, settings.topics.coordinator_app_id,
                                        [(tp.topic, tp.partition) for tp in assigned])
    known = app.consumer._committed_offset
    for tp in assigned:
        offset = committed.get((tp.topic, tp.partition), 0)
        known[tp] = offset if offset > 0 else None
    unset = [tp for tp in assigned if committed.get((tp.topic, tp.partition), 0) <= 0]
    if unset:
        for tp, offset in (await app.consumer.earliest_offsets(*unset)).items():
            await app.consumer.seek(tp, offset)
            committed[(tp.topic, tp.partition)] = offset
    return committed


class InputWatch:
    """``OffsetContinuity`` hooked to faust: partitions revoked and assigned, each batch's
    events, and the consumer's log ends. A skip or a stall ends the process
    (``end_process``) before the batch is acknowledged.

    Args:
        app: the faust app.
        settings: the coordinator's settings (input topics, the group's offsets).
        stall_s: how long a record may wait in an input partition, past the last one
            applied, with none applied meanwhile, seconds (``OffsetContinuity.stalled``).
    """

    def __init__(self, app: Any, settings: Settings, stall_s: float) -> None:
        self.app = app
        self.settings = settings
        self.stall_s = stall_s
        self.inputs = settings.topics.inputs
        self.continuity = OffsetContinuity()

    def revoked(self, partitions: Iterable[Any]) -> None:
        """Partitions revoked: another process may move them on meanwhile."""
        self.continuity.forget((tp.topic, tp.partition) for tp in partitions)

    async def assigned(self) -> None:
        """After a rebalance, before the streams resume: where each assigned input
        partition must start (``start_offsets``)."""
        assigned = [tp for tp in self.app.consumer.assignment() if tp.topic in self.inputs]
        try:
            start = await start_offsets(self.app, self.settings, assigned)
        except Exception as e:  # a safeguard: go on without it this time, and say so
            log.warning("cannot read the committed offsets (%s: %s)", type(e).__name__, e)
            return
        log.info("assigned %s; starting at %s", sorted(assigned), start)
        self.continuity.expect(start)

    def admit(self, events: list[Any]) -> list[InputRecord]:
        """The records of a batch of faust events, once their offsets are checked (a
        skip ends the process)."""
        offsets = [(e.message.topic, e.message.partition, e.message.offset) for e in events]
        skipped = self.continuity.check(offsets)
        if skipped:
            end_process(self.app, f"input records were skipped ({skipped})")
        if log.isEnabledFor(logging.INFO):  # HEADWATER_LOG_LEVEL=info
            log.info("batch: %s", offset_ranges(offsets))
        return [InputRecord(m.topic, m.partition, m.offset, m.key, m.value,
                            list(m.headers or ())) for m in (e.message for e in events)]

    async def check_stalled(self) -> None:
        """End the process when an input partition stalled (a record lost on its way to
        the stream with nothing after it); nothing while rebalancing."""
        if self.app.rebalancing:
            return
        ends: dict[tuple[str, int], int | None] = {}
        for tp in self.app.consumer.assignment():
            if tp.topic in self.inputs:
                ends[(tp.topic, tp.partition)] = self.app.consumer.highwater(tp)
        why = self.continuity.stalled(ends, self.stall_s)
        if why is not None:
            end_process(self.app, f"input records stalled ({why})")


def on_rebalance(app: FaustApp, reset: Callable[[], None], watch: InputWatch) -> None:
    """After every rebalance call ``reset`` and then ``watch.assigned`` (one receiver,
    in this order); tell ``watch`` of revoked partitions."""

    async def _on_revoked(sender: Any, revoked: Any = (), **kwargs: Any) -> None:
        watch.revoked(revoked)

    async def _on_rebalance(sender: Any, **kwargs: Any) -> None:
        reset()
        await watch.assigned()

    app.on_partitions_revoked.connect(_on_revoked)  # type: ignore[arg-type]
    app.on_rebalance_complete.connect(_on_rebalance)  # type: ignore[arg-type]


def add_input_agent(app: FaustApp, settings: Settings, watch: InputWatch,
                    apply: Callable[[list[InputRecord]], Awaitable[None]],
                    grace_s: float) -> None:
    """Apply the input topics' records in batches (``settings.batch_max`` records, waiting
    at most ``settings.batch_window_s``) with ``apply``, one batch at a time
    (``consume_batches``)."""
    inputs = app.topic(*settings.topics.inputs, key_serializer="raw", value_serializer="raw")

    # Concurrency 1: faust-streaming can commit past in-flight events above 1 (issue 606).
    @app.agent(inputs, concurrency=1)
    async def coordinate(stream: Any) -> None:
        batches = stream.take_events(settings.batch_max, settings.batch_window_s)
        await consume_batches(app, batches, watch, apply, grace_s)


async def consume_batches(app: Any, batches: Any, watch: InputWatch,
                          apply: Callable[[list[InputRecord]], Awaitable[None]],
                          grace_s: float) -> None:
    """Apply each batch of ``take_events``' generator ``batches``, then close it.

    ``take_events`` acknowledges a batch in a ``finally``, even when the loop body raised
    or was cancelled: a batch that failed half-way must never be committed, so such a
    failure ends the process at once (its inputs are then redelivered to whoever takes
    the partitions over), and a cancel (the coordinator stopping) lets the batch finish
    first, for up to ``grace_s`` seconds; past that the process exits.
    """
    try:
        async for batch in batches:
            records = watch.admit(batch)
            try:
                await finish(apply(records), grace_s)
            except Unfinished as e:
                exit_now(f"the batch in hand could not be finished: {e}")
            except Exception:
                log.exception("a batch failed half-way")
                end_process(app, "a batch failed half-way")
    finally:
        await batches.aclose()  # acknowledges a finished batch now, not at collection


def quiet_logging(app: FaustApp) -> None:
    """Once the worker has set up logging: the root logger at WARNING, Headwater's at INFO.
    faust's worker leaves the root logger at DEBUG and filters in its handler, so every
    debug call of aiokafka and faust builds a record (~5% of the CPU at load)."""

    @app.task  # type: ignore[untyped-decorator]
    async def quiet_logging() -> None:
        logging.getLogger().setLevel(logging.WARNING)
        logging.getLogger("headwater").setLevel(logging.INFO)
        logging.getLogger("services").setLevel(logging.INFO)


def every(app: FaustApp, interval_s: float, tick: Callable[[], Awaitable[None]]) -> None:
    """Run ``tick`` every ``interval_s`` seconds while the app runs."""
    app.timer(interval=interval_s)(tick)


def background(app: FaustApp, work: Callable[[], Awaitable[None]]) -> None:
    """Run ``work`` while the app runs (cancelled when it stops)."""
    app.task(work)
