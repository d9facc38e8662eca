"""Wires the coordinator: the faust app, its table, agent, timer loop and projector.

SIGTERM (``shutdown``): faust finishes the batch in hand, commits and leaves the group;
the agent never lets a batch be acknowledged half-applied, and a failure while stopping
exits instead of restarting in place.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Iterable
from typing import Any, NoReturn

import faust

from headwater.core import events as ev
from services.common.kafka import committed_offsets, ensure_topics
from services.coordinator.bus import FaustBus
from services.coordinator.continuity import OffsetContinuity
from services.coordinator.handler import Coordinator, InputRecord
from services.coordinator.membership import leave_group
from services.coordinator.pause import PauseWatch
from services.coordinator.projection import run_projector
from services.coordinator.settings import Settings
from services.coordinator.shutdown import CoordinatorWorker, Unfinished, exit_now, finish
from services.coordinator.store import TableStore, WorkflowTable
from services.coordinator.timers import TimerIndex

log = logging.getLogger("headwater.coordinator")
TABLE_NAME = "workflows"  # faust names its changelog <app id>-<table>-changelog
SESSION_TIMEOUT_S = 10.0
"""Kafka's ``session.timeout.ms`` of the coordinators' group, seconds."""
STALL_S = 30.0
"""How long an input partition may hold records past the last one applied with none of
them arriving before the coordinator restarts (``OffsetContinuity.stalled``), seconds."""
BATCH_GRACE_S = 15.0
"""How long a batch may take to finish once the agent is cancelled (the coordinator is
stopping), seconds; past it the process exits without acknowledging the batch."""


def create_app(settings: Settings) -> faust.App:
    """Build the faust app. Run it with ``app.main()`` (argv ``worker``)."""
    topics = settings.topics
    app = faust.App(
        topics.coordinator_app_id,
        broker=f"kafka://{settings.bootstrap}",
        store=settings.store,
        datadir=settings.data_dir,
        topic_partitions=settings.partitions,
        topic_replication_factor=settings.replication,
        table_standby_replicas=0,
        processing_guarantee="at_least_once",
        producer_acks=-1,
        producer_max_request_size=settings.max_message_bytes,
        consumer_max_fetch_size=settings.max_message_bytes,
        consumer_auto_offset_reset="earliest",
        web_enabled=False,
        broker_commit_interval=0.5,
        # A crashed coordinator's partitions move after 10 s, not faust's default 60 s.
        broker_session_timeout=SESSION_TIMEOUT_S,
        broker_heartbeat_interval=3.0,
        key_serializer="raw",
        value_serializer="raw",
        Worker=CoordinatorWorker,
    )
    inputs = app.topic(*topics.inputs, key_serializer="raw", value_serializer="raw")
    table = WorkflowTable(app, name=TABLE_NAME, partitions=settings.partitions,
                          key_type=bytes, value_type=bytes, beacon=app.tables.beacon,
                          help="workflow snapshots")
    app.tables.add(table)
    bus = FaustBus(app, settings)
    store = TableStore(table)
    timers = TimerIndex()
    timers.leases_from_ms = int(time.time() * 1000)
    # Stood still for half a session: its partitions may be moving; write nothing more.
    watch = PauseWatch(SESSION_TIMEOUT_S / 2).start()
    coordinator = Coordinator(topics, bus, store, timers, settings.max_message_bytes,
                              fence=watch.check)
    rescan = asyncio.Event()
    rescan.set()

    continuity = OffsetContinuity()

    async def _on_revoked(sender: Any, revoked: Any = (), **kwargs: Any) -> None:
        continuity.forget((tp.topic, tp.partition) for tp in revoked)

    app.on_partitions_revoked.connect(_on_revoked)  # type: ignore[arg-type]

    async def _on_rebalance(sender: Any, **kwargs: Any) -> None:
        store.clear_cache()
        timers.clear()
        timers.leases_from_ms = int(time.time() * 1000)
        rescan.set()
        # Before the streams resume: where each assigned input partition must start.
        assigned = [tp for tp in app.consumer.assignment() if tp.topic in topics.inputs]
        try:
            start = await start_offsets(app, settings, assigned)
        except Exception as e:  # a safeguard: go on without it this time, and say so
            log.warning("cannot read the committed offsets (%s: %s)", type(e).__name__, e)
            return
        log.info("assigned %s; starting at %s", sorted(assigned), start)
        continuity.expect(start)

    app.on_rebalance_complete.connect(_on_rebalance)  # type: ignore[arg-type]

    def restart_or_exit(reason: str) -> NoReturn:
        leave_group(app)  # so that the next owner need not wait for our session to expire
        if app.should_stop:  # stopping (SIGTERM): exit, do not start over
            exit_now(f"{reason}, while stopping")
        restart(reason)

    async def _on_recovered(partitions: set[int]) -> None:
        try:  # before the partitions' inputs are read (``WorkflowTable``)
            await coordinator.recover(partitions)
        except Exception:
            log.exception("cannot carry out the intents left in partitions %s",
                          sorted(partitions))
            restart_or_exit("unfinished intents could not be carried out")

    table.on_recovered = _on_recovered

    # Concurrency 1: faust-streaming can commit past in-flight events above 1 (issue 606).
    @app.agent(inputs, concurrency=1)
    async def coordinate(stream: Any) -> None:
        # take_events acks a batch after the loop body, even when the body raised or was
        # cancelled: a batch that failed half-way must never be committed, so such a
        # failure ends the process at once (its inputs are then redelivered to whoever
        # takes the partitions over), and a cancel (the coordinator stopping) lets the
        # batch finish first (``finish``).
        batches = stream.take_events(settings.batch_max, settings.batch_window_s)
        try:
            async for batch in batches:
                skipped = continuity.check(
                    (e.message.topic, e.message.partition, e.message.offset) for e in batch)
                if skipped:
                    restart_or_exit(f"input records were skipped ({skipped})")
                if log.isEnabledFor(logging.INFO):  # HEADWATER_LOG_LEVEL=info
                    log.info("batch: %s", offset_ranges(
                        (e.message.topic, e.message.partition, e.message.offset)
                        for e in batch))
                records = [InputRecord(e.message.topic, e.message.partition,
                                       e.message.offset, e.message.key, e.message.value,
                                       list(e.message.headers or ())) for e in batch]
                try:
                    await finish(coordinator.handle_batch(records), BATCH_GRACE_S)
                except Unfinished as e:
                    exit_now(f"the batch in hand could not be finished: {e}")
                except Exception:
                    log.exception("a batch failed half-way")
                    restart_or_exit("a batch failed half-way")
        finally:
            await batches.aclose()  # acknowledges a finished batch now, not at collection

    @app.task  # type: ignore[untyped-decorator]
    async def quiet_logging() -> None:
        # faust's worker leaves the root logger at DEBUG and filters in its handler, so
        # every debug call of aiokafka and faust builds a record (~5% of the CPU at load).
        logging.getLogger().setLevel(logging.WARNING)
        logging.getLogger("headwater").setLevel(logging.INFO)
        logging.getLogger("services").setLevel(logging.INFO)

    @app.timer(interval=settings.timer_interval_s)  # type: ignore[untyped-decorator]
    async def fire_timers() -> None:
        if rescan.is_set() and not app.rebalancing:
            rescan.clear()
            for state in store.scan():
                timers.arm(state)
        now_ms = int(time.time() * 1000)
        for workflow_id, timer_id, fire_at_ms in timers.pop_due(now_ms):
            await bus.send_control(ev.TimerFired(workflow_id, timer_id, max(now_ms, fire_at_ms)))

    @app.timer(interval=1.0)  # type: ignore[untyped-decorator]
    async def watch_inputs() -> None:
        if app.rebalancing:
            return
        ends: dict[tuple[str, int], int | None] = {}
        for tp in app.consumer.assignment():
            if tp.topic in topics.inputs:
                ends[(tp.topic, tp.partition)] = app.consumer.highwater(tp)
        why = continuity.stalled(ends, STALL_S)
        if why is not None:
            restart_or_exit(f"input records stalled ({why})")

    if settings.projection:
        @app.task  # type: ignore[untyped-decorator]
        async def project_events() -> None:
            await run_projector(settings)

    return app


async def start_offsets(app: faust.App, settings: Settings,
                        assigned: list[Any]) -> dict[tuple[str, int], int]:
    """Where each assigned input partition's records must start: the group's committed
    offset; for a partition without one (or at 0), its first offset, sought to here.

    aiokafka's ``seek_to_committed`` and faust's ``perform_seek`` both take a committed
    offset of 0 for none and do not seek such a partition, which then goes on from
    wherever the fetcher stood: records at its head were seen skipped in the fault suite
    (a coordinator started at offset 42 of a partition nobody had committed).
    """
    committed = await committed_offsets(settings, settings.topics.coordinator_app_id,
                                        [(tp.topic, tp.partition) for tp in assigned])
    unset = [tp for tp in assigned if committed.get((tp.topic, tp.partition), 0) <= 0]
    if unset:
        for tp, offset in (await app.consumer.earliest_offsets(*unset)).items():
            await app.consumer.seek(tp, offset)
            committed[(tp.topic, tp.partition)] = offset
    return committed


def offset_ranges(records: Iterable[tuple[str, int, int]]) -> str:
    """``topic[partition]@first..last`` per input partition of a batch, for the log."""
    ranges: dict[tuple[str, int], list[int]] = {}
    for topic, partition, offset in records:
        seen = ranges.setdefault((topic, partition), [offset, offset])
        seen[0], seen[1] = min(seen[0], offset), max(seen[1], offset)
    return " ".join(f"{t}[{p}]@{a}..{b}" for (t, p), (a, b) in sorted(ranges.items()))


def restart(reason: str) -> NoReturn:
    """Replace this process with a fresh coordinator (same pid), without acknowledging
    the current batch: it resumes from the last committed offsets."""
    log.critical("restarting: %s", reason)
    logging.shutdown()
    try:
        os.execv(sys.executable, [sys.executable, "-m", "services.coordinator"])
    finally:
        os._exit(70)  # exec failed: exit, so that a supervisor restarts us


async def prepare(settings: Settings) -> None:
    """Create the topics the coordinator reads and writes, before faust starts: the
    events topic (the history) with ``retention.ms`` = ``settings.events_retention_ms``."""
    topics = settings.topics
    await ensure_topics(settings, [topics.events],
                        configs={"retention.ms": str(settings.events_retention_ms)})
    await ensure_topics(settings, [*topics.inputs, topics.worker_control, topics.dlq])
