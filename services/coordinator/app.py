"""Wires the coordinator: the faust app and its table (``faust_seam``), the store, the
batch applier on the input agent, the input watch, the timer loop, the probes
(``/health`` and ``/ready`` on the metrics port: ``services.common.probes``) and the
projector.

SIGTERM: faust finishes the batch in hand, commits and leaves the group; the agent never
lets a batch be acknowledged half-applied, and a failure while stopping exits instead of
restarting in place (``faust_seam.CoordinatorWorker``, ``faust_seam.add_input_agent``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from services.common import heap
from services.common.kafka.client import COMPACTED, describe_config, ensure_topics
from services.common.probes import PROBES
from services.common.topic_reader import TopicReader
from services.coordinator import retention
from services.coordinator.batch import BatchApplier
from services.coordinator.bus import FaustBus
from services.coordinator.faust_seam import app as seam
from services.coordinator.faust_seam import inputs as seam_inputs
from services.coordinator.faust_seam.partition_db import ChangelogFacts, read_changelog_facts
from services.coordinator.faust_seam.restore import changelog_reader
from services.coordinator.freeze import FreezeWatch
from services.coordinator.settings import Settings
from services.coordinator.store import TableStore
from services.coordinator.timers import TimerIndex, TimerLoop
from services.projector.writer import run_projector

log = logging.getLogger("headwater.coordinator")
TABLE_NAME = "workflows"  # faust names its changelog <app id>-<table>-changelog
SESSION_TIMEOUT_S = 10.0
"""Kafka's ``session.timeout.ms`` of the coordinators' group, seconds."""
STALL_S = 30.0
"""How long a record may wait in an input partition, past the last one applied, with
none applied meanwhile, before the coordinator restarts (``OffsetContinuity.stalled``),
seconds."""
BATCH_GRACE_S = 15.0
"""How long a batch may take to finish once the agent is cancelled (the coordinator is
stopping), seconds; past it the process exits without acknowledging the batch."""
STALL_CHECK_S = 1.0
"""How often the input partitions are checked for a stall, seconds."""


def create_app(settings: Settings, facts: ChangelogFacts | None = None) -> seam.FaustApp:
    """Build the coordinator's faust app. Run it with ``app.main()`` (argv ``worker``).

    Args:
        settings: the coordinator's settings.
        facts: what the broker said of the table's changelog (``prepare``), for a
            persistent table store's checks; None for the memory store.
    """
    app = seam.build_app(settings, SESSION_TIMEOUT_S)
    table = seam.add_table(app, TABLE_NAME, settings.partitions)
    table.changelog_facts = facts
    table.changelog_reader = changelog_reader(settings)
    bus = FaustBus(app, settings, settings.auth.headers)
    store = TableStore(table)
    timers = TimerIndex()
    timer_loop = TimerLoop(timers, store.scan, bus.send_control, lambda: bool(app.rebalancing))
    # Stood still for half a session: its partitions may be moving; write nothing more.
    freeze = FreezeWatch(SESSION_TIMEOUT_S / 2).start()
    applier = BatchApplier(settings.topics, bus, store, timers, settings.max_message_bytes,
                           fence=freeze.check)
    applier.history_heartbeats = settings.history_heartbeats
    applier.auth = settings.auth.authenticator
    add_retention(app, settings, table, applier, bus)
    watch = seam_inputs.InputWatch(app, settings, STALL_S)
    seam_inputs.on_rebalance(app, reset_after_rebalance(store, timer_loop), watch)
    table.on_recovered = recover_or_end(app, applier)
    seam_inputs.add_input_agent(app, settings, watch, applier.apply_batch, BATCH_GRACE_S)
    seam.follow_readiness(app, PROBES.part("coordinator"))
    seam.background(app, lambda: PROBES.watch(settings.bootstrap, settings.kafka_security))
    seam.quiet_logging(app)
    seam.offsets_on_own_connection(app, seam.offsets_client(settings))
    seam.every(app, settings.timer_interval_s, timer_loop.tick)
    seam.every(app, STALL_CHECK_S, watch.check_stalled)
    seam.every(app, heap.TRIM_INTERVAL_S, heap.release_in_thread)
    if settings.projection:
        add_projector(app, settings)
    return app


def reset_after_rebalance(store: TableStore, timer_loop: TimerLoop) -> Callable[[], None]:
    """What a rebalance resets: the cached states (partitions may have moved) and the
    timers, re-armed from the table at the next tick."""

    def reset() -> None:
        store.clear_cache()
        timer_loop.reset()

    return reset


def recover_or_end(app: seam.FaustApp,
                   applier: BatchApplier) -> Callable[[set[int]], Awaitable[None]]:
    """The table's recovery hook: carry out the intents left in the recovered
    partitions (before their inputs are read); if that fails, end the process."""

    async def recover(partitions: set[int]) -> None:
        try:
            await applier.recover(partitions)
        except Exception:
            log.exception("cannot carry out the intents left in partitions %s",
                          sorted(partitions))
            seam.end_process(app, "unfinished intents could not be carried out")

    return recover


def add_retention(app: seam.FaustApp, settings: Settings, table: seam.WorkflowTable,
                  applier: BatchApplier, bus: FaustBus) -> None:
    """Purge ended workflows past ``settings.retention_s`` (``retention``); nothing when
    it is None."""
    if settings.retention_s is None:
        return
    applier.retention_ms = round(settings.retention_s * 1000)
    sweep = retention.RetentionSweep(lambda: list(seam.read_headers(table)),
                                     bus.send_control, settings.retention_s,
                                     lambda: bool(app.rebalancing))
    seam.every(app, retention.sweep_interval_s(settings.retention_s), sweep.tick)


def add_projector(app: seam.FaustApp, settings: Settings) -> None:
    """Keep the PostgreSQL projection in this process (``HEADWATER_PROJECTION=on``)."""
    PROBES.part("projector")  # not ready before the projector has joined its group

    async def project_events() -> None:
        await run_projector(settings)

    seam.background(app, project_events)


async def prepare(settings: Settings) -> ChangelogFacts | None:
    """Create the topics the coordinator reads and writes, before faust starts: the
    events topic (the history) with ``retention.ms`` = ``settings.events_retention_ms``,
    and the table's changelog, compacted (``seam.CHANGELOG_CONFIGS``). With a persistent
    table store (not ``memory://``), read what the broker says of the changelog
    (``partition_db.read_changelog_facts``).

    Returns:
        The changelog's facts, or None for the memory store.

    Raises:
        RuntimeError: the changelog exists as it must not be (``changelog_fault``).
    """
    topics = settings.topics
    await ensure_topics(settings, [topics.events],
                        configs={"retention.ms": str(settings.events_retention_ms)})
    await ensure_topics(settings, [*topics.inputs, topics.worker_control, topics.dlq])
    await ensure_topics(settings, [topics.table_changelog],
                        configs={**COMPACTED, **seam.CHANGELOG_CONFIGS})
    async with TopicReader(settings.bootstrap, security=settings.kafka_security) as reader:
        config = await describe_config(reader.admin, topics.table_changelog)
        partitions = len(await reader.partitions(topics.table_changelog))
        fault = changelog_fault(topics.table_changelog, config.get("cleanup.policy", ""),
                                partitions, settings.partitions)
        if fault is not None:
            raise RuntimeError(fault)
        if settings.store.startswith("memory:"):
            return None
        return await read_changelog_facts(reader, topics.table_changelog)




def changelog_fault(topic: str, policy: str, partitions: int, expected: int) -> str | None:
    """Why the table's changelog cannot be used, or None.

    Args:
        topic: its name.
        policy: its ``cleanup.policy`` (``compact``, ``delete`` or ``compact,delete``).
        partitions: its partition count.
        expected: the input topics' (``HEADWATER_PARTITIONS``).

    Returns:
        The reason, with the fix, for a changelog that is not compacted only (a
        ``delete`` policy, even beside ``compact``, drops records after ``retention.ms``:
        a restart would lose the workflows written before; created so by a broker's
        ``auto.create.topics.enable``, or by hand), or whose partition count is not the
        input topics' (a workflow's entries go to its input partition: the producer
        refuses those past the changelog's last one, and the batch fails for ever).
    """
    flags = {f.strip() for f in policy.split(",") if f.strip()}
    if flags != {"compact"}:
        return (f"the table's changelog {topic} has cleanup.policy={policy!r}: Kafka would "
                "delete its records after retention.ms and a restart would lose the "
                "workflows written before; make it compact only (kafka-configs --alter "
                "--add-config cleanup.policy=compact, docs/operating.md)")
    if partitions != expected:
        return (f"the table's changelog {topic} has {partitions} partitions, the input "
                f"topics {expected} (HEADWATER_PARTITIONS): each workflow's entries go to "
                "its input partition; if it holds nothing yet (a broker created it), "
                "delete it and the coordinator creates it again; one holding workflows was "
                "written with another HEADWATER_PARTITIONS: set that")
    return None
