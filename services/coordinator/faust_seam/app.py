"""The faust app of a coordinator: building it (``build_app``), its worker and the
second SIGTERM (``CoordinatorWorker``), the workflows table and how its entries are read
(``WorkflowTable``, ``read_entry``), record sizes as aiokafka counts them
(``record_bytes``), leaving the group and ending the process (``leave_group``,
``end_process``), offsets requests on a connection of their own
(``offsets_on_own_connection``), logging, timers and background work. The workarounds are
numbered as in the package's docstring (3, 6, 7, 8, 9, 12).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, NoReturn, TypeAlias

import faust
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from services.common.kafka.security import aiokafka_security, faust_credentials
from services.common.probes import PROBES, Part
from services.coordinator.faust_seam.partition_db import ChangelogFacts
from services.coordinator.faust_seam.restore import (
    RETRY_BACKOFF_MS,
    ReaderFactory,
    RestoringMemoryStore,
)
from services.coordinator.keys import TABLE_KEY_SEP, entry_partition
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
        if self._signal_stop_time or getattr(self, "_stopping_since", None) is not None:
            exit_now(f"a second {sig.name} while stopping", 128 + sig.value)
        PROBES.drain(f"stopping ({sig.name})")
        self._stopping_since = time.monotonic()
        first: Callable[[], Awaitable[None]] | None = getattr(self.app, BEFORE_STOP, None)
        if first is not None:  # the other parts of the process drain first
            self._draining = asyncio.ensure_future(self._stop_after(first, sig))
            return
        self._stop(sig)

    async def _stop_after(self, first: Callable[[], Awaitable[None]],
                          sig: signal.Signals) -> None:
        try:
            await first()
        except Exception:  # the coordinator stops all the same
            log.exception("the parts stopped before the coordinator failed")
        self._stop(sig)

    def _stop(self, sig: signal.Signals) -> None:
        log.warning("coordinator stopping (%s): finishing the batch in hand, committing, "
                    "leaving the group; a second signal exits at once", sig.name)
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


BEFORE_STOP = "headwater_before_stop"
"""The app's attribute holding what the first signal awaits before faust stops
(``before_stop``)."""


def before_stop(app: FaustApp, first: Callable[[], Awaitable[None]]) -> None:
    """On the first SIGTERM or SIGINT, await ``first`` (the other parts of the process
    draining: ``headwater serve``'s gateway and workers) before the coordinator stops."""
    setattr(app, BEFORE_STOP, first)


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
    changelog_facts: ChangelogFacts | None = None
    """What the broker said of the changelog at start, for a persistent store's checks
    (``partition_db.read_changelog_facts``); set before the store is first used."""
    changelog_reader: ReaderFactory | None = None
    """The readers with which the table's store restores its new partitions itself
    (``restore.changelog_reader``; None: faust restores them); set before the store is
    first used."""

    async def on_recovery_completed(self, active_tps: set[Any], standby_tps: set[Any]) -> None:
        """faust's hook after recovery (``faust.tables.recovery``, before ``resume_flow``)."""
        await super().on_recovery_completed(active_tps, standby_tps)
        if self.on_recovered is not None:
            await self.on_recovered({tp.partition for tp in active_tps})

    def _new_store_by_url(self, url: Any) -> Any:
        """``rocksdb:`` URLs: ``rocks.PartitionedRocksStore`` (routed by
        ``partition_for_key``, written behind the changelog, checked against
        ``changelog_facts`` when a partition's DB is opened); ``memory:`` URLs:
        ``restore.RestoringMemoryStore`` (reading ``changelog_reader``); others as faust
        builds them."""
        # What faust's own _new_store_by_url passes every store.
        table: dict[str, Any] = {
            "table_name": self.name, "key_type": self.key_type,
            "key_serializer": self.key_serializer, "value_type": self.value_type,
            "value_serializer": self.value_serializer, "loop": self.loop,
            "options": self.options}
        if str(url).startswith("rocksdb:"):
            from services.coordinator.faust_seam.rocks import PartitionedRocksStore
            return PartitionedRocksStore(url, self.app, self, **table,
                                         facts=self.changelog_facts,
                                         reader=self.changelog_reader)
        if str(url).startswith("memory:"):
            return RestoringMemoryStore(url, self.app, self, **table,
                                        reader=self.changelog_reader)
        return super()._new_store_by_url(url)

    def partition_for_key(self, key: Any) -> int | None:
        """The partition of a table key: a workflow's entries go where its input records
        do (Kafka's default partitioner of the workflow id); an intent's slot to its own."""
        partitions: int = self.partitions or self.app.conf.topic_partitions
        return entry_partition(bytes(key), partitions)


CHANGELOG_CONFIGS = {"segment.ms": str(3_600_000), "min.cleanable.dirty.ratio": "0.1"}
"""Topic configs of the table's changelog besides compaction, set when faust creates it
(an existing topic keeps its own: ``kafka-configs --alter``, docs/operations.md). Kafka
compacts only closed segments: a segment closes after an hour (by default after a week
or 1 GiB), and the log is compacted once a tenth of it (by default half) holds
overwritten entries, so the changelog, and what a restart with an empty local store
reads, stays near the size of the live table."""


def add_table(app: FaustApp, name: str, partitions: int) -> WorkflowTable:
    """A ``WorkflowTable`` of raw bytes named ``name`` (its changelog is
    ``<app id>-<name>-changelog``, with ``CHANGELOG_CONFIGS``), added to the app."""
    table = WorkflowTable(app, name=name, partitions=partitions, key_type=bytes,
                          value_type=bytes, beacon=app.tables.beacon, help="workflow snapshots",
                          extra_topic_configs=CHANGELOG_CONFIGS)
    app.tables.add(table)
    return table


def read_entry(table: Any, key: bytes) -> bytes | None:
    """An entry of the table's local store, raw (no cache, no decoding)."""
    value: bytes | None = table.data.get(key)
    return value


def read_headers(table: Any) -> Iterator[tuple[bytes, bytes]]:
    """Every workflow header of the table's local store with its raw value: the entries
    whose key holds no ``TABLE_KEY_SEP`` (intents' keys start with it). A store that
    iterates them itself (``rocks.PartitionedRocksStore.headers``) is asked; otherwise
    the store's items (a copy: the caller may write meanwhile) are filtered."""
    headers = getattr(table.data, "headers", None)
    if headers is not None:
        yield from headers()
        return
    sep = TABLE_KEY_SEP.encode()
    for key, value in list(table.data.items()):
        if sep not in bytes(key) and value is not None:
            yield bytes(key), bytes(value)


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


def offsets_client(settings: Settings) -> Callable[[], AIOKafkaConsumer]:
    """Consumers without a group for the app's offsets requests, not started: the
    coordinator's bootstrap servers and security, ``restore.RETRY_BACKOFF_MS``."""
    return lambda: AIOKafkaConsumer(
        bootstrap_servers=settings.bootstrap, **aiokafka_security(settings.kafka_security),
        group_id=None, enable_auto_commit=False, retry_backoff_ms=RETRY_BACKOFF_MS)


def offsets_on_own_connection(app: FaustApp, new_client: Callable[[], Any]) -> None:
    """The app's consumer answers ``earliest_offsets`` and ``highwaters`` (Kafka's
    ListOffsets) through a client of their own, ``new_client()`` (``offsets_client``),
    not its own connection (workaround 12).

    aiokafka sends them on the connection its fetches use, and the broker answers a
    connection's requests in order: each waited behind a fetch of partitions with nothing
    new, which the broker holds for faust's ``fetch_max_wait_ms`` (1.5 s, fixed by
    faust). A coordinator taking partitions over asks three times (faust's recovery: the
    changelog's high watermarks and first offsets; ``inputs.start_offsets``: the first
    offsets of input partitions nobody committed): 3.7 s of waits at a takeover, against a
    restore of 179,000 changelog records in 1.0 s (B9). A fetch wait of 200 ms instead
    made joining coordinators restart on skipped input records (architecture.md).

    The clients learn a topic's leaders after ``restore.RETRY_BACKOFF_MS``, as the
    restore's reader does (why: there). With faust's exactly-once processing the consumer
    would answer ``highwaters`` with the last stable offsets: ``build_app`` sets
    at-least-once."""
    async def earliest_offsets(*partitions: Any) -> dict[Any, int]:
        return await read_offsets(new_client, partitions, first=True)

    async def highwaters(*partitions: Any) -> dict[Any, int]:
        return await read_offsets(new_client, partitions, first=False)

    def patched(consumer: Any) -> Any:
        consumer.earliest_offsets = earliest_offsets
        consumer.highwaters = highwaters
        return consumer

    # Patched as faust makes it, at the point of faust's start where it would.
    new_consumer = app._new_consumer
    app._new_consumer = lambda: patched(new_consumer())  # type: ignore[method-assign]


async def read_offsets(new_client: Callable[[], Any], partitions: Iterable[Any],
                       first: bool) -> dict[Any, int]:
    """Each partition's first offset (``first``), or the next offset it will write, asked
    with one client from ``new_client`` (started and stopped here); keyed by the
    partitions as given (faust's ``TP``)."""
    given = list(partitions)
    if not given:
        return {}
    asked = [TopicPartition(tp.topic, tp.partition) for tp in given]
    client = new_client()
    await client.start()
    try:
        found = await (client.beginning_offsets(asked) if first else client.end_offsets(asked))
    finally:
        await client.stop()
    return {tp: found[a] for tp, a in zip(given, asked, strict=True)}


def quiet_logging(app: FaustApp) -> None:
    """Once the worker has set up logging: the root logger at WARNING, Headwater's at INFO.
    faust's worker leaves the root logger at DEBUG and filters in its handler, so every
    debug call of aiokafka and faust builds a record (~5% of the CPU at load)."""

    @app.task  # type: ignore[untyped-decorator]
    async def quiet_logging() -> None:
        logging.getLogger().setLevel(logging.WARNING)
        logging.getLogger("headwater").setLevel(logging.INFO)
        logging.getLogger("services").setLevel(logging.INFO)


def follow_readiness(app: FaustApp, part: Part) -> None:
    """Tell ``part`` (the coordinator's readiness, ``services.common.probes``) of the
    group's rebalances: not ready from the revocation that starts one until faust's
    ``on_rebalance_complete``, sent once the new assignment's table partitions are
    restored and before their input streams resume."""

    async def revoked(sender: Any, *args: Any, **kwargs: Any) -> None:
        part.rebalancing()

    async def complete(sender: Any, *args: Any, **kwargs: Any) -> None:
        part.assigned()

    app.on_partitions_revoked.connect(revoked)  # type: ignore[arg-type]
    app.on_rebalance_complete.connect(complete)  # type: ignore[arg-type]


def every(app: FaustApp, interval_s: float, tick: Callable[[], Awaitable[None]]) -> None:
    """Run ``tick`` every ``interval_s`` seconds while the app runs."""
    app.timer(interval=interval_s)(tick)


def background(app: FaustApp, work: Callable[[], Awaitable[None]]) -> None:
    """Run ``work`` while the app runs (cancelled when it stops)."""
    app.task(work)
