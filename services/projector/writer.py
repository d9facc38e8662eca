"""The projector's writer: ``events`` projected into PostgreSQL (workflows, nodes, tasks,
the event log and the node kinds' tables), by ``Projector`` in its own consumer group. It
runs inside the coordinator's process (``HEADWATER_PROJECTION=on``, ``run_projector``) or
alone (``python -m services.projector``); a rebuild (``rebuild.py``) uses its ``project``.
What each event writes is in ``statements.py`` (the core tables) and ``kinds.py`` (the
node kinds').

Idempotent and monotonic: every row remembers the ``seq`` of the event that last
changed it and ignores events with a lower or equal ``seq``, so duplicates and
out-of-order delivery never move a row backwards, and a terminal row (the last seq of
its workflow) is never reopened. Each batch ends with ``NOTIFY headwater_events`` naming
the workflows it touched, which wakes the gateway's SSE streams.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Iterable
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka.errors import CommitFailedError

from headwater import codec
from headwater.core import events as ev
from headwater.errors import DecodeError
from services.common.db import NOTIFY_CHANNEL, UNAVAILABLE, connect_pool, notify_payloads
from services.common.finishing import Unfinished, finish
from services.common.kafka.client import started
from services.common.kafka.security import aiokafka_security
from services.common.probes import PROBES, Part
from services.common.settings import CommonSettings
from services.projector import metrics
from services.projector.code_steps import CODE_STATEMENTS, code_plan
from services.projector.kinds import KIND_STATEMENTS, KIND_STEPS, kind_plan
from services.projector.pauses import PAUSE_EVENTS, PAUSE_STATEMENTS, pause_plan
from services.projector.refusals import follow_refusals
from services.projector.restarts import RESTART_STATEMENTS, SWEEPS, restart_plan
from services.projector.schedules import SCHEDULE_STEPS
from services.projector.statements import (
    BUMP_WORKFLOW,
    CORE_STATEMENTS,
    NODE_AND_TASK_STEPS,
    Statements,
    core_plan,
)
from services.projector.task_logs import LogProjector
from services.webhooks.runner import run_webhooks

log = logging.getLogger(__name__)

# Values PostgreSQL refuses (NUL in text or jsonb, JSON nested too deep for orjson):
# the event is stored with such values replaced rather than stall the projection.
UNSTORABLE = (asyncpg.DataError, asyncpg.ProgramLimitExceededError, TypeError, ValueError)


async def project(conn: asyncpg.Connection, events: list[ev.HistoryEvent]) -> set[str]:
    """Apply events to the projection in one transaction.

    An event holding values PostgreSQL cannot store is projected with those values
    replaced (``sanitize``); the history on Kafka keeps the original.

    Returns:
        The ids of the workflows whose rows changed.
    """
    try:
        return await _project_batch(conn, events, careful=False)
    except UNSTORABLE as e:
        log.warning("a batch holds values PostgreSQL refuses (%s); projecting it event by "
                    "event", e)
        return await _project_batch(conn, events, careful=True)


async def _project_batch(conn: asyncpg.Connection, events: list[ev.HistoryEvent],
                         careful: bool) -> set[str]:
    async with conn.transaction():
        if careful:
            for e in events:
                await _project_carefully(conn, e)
        else:
            await _project_grouped(conn, events)
        touched = sorted({e.workflow_id for e in events})
        for sweep in SWEEPS:  # rows of a generation before a restart (``restarts.py``)
            await conn.execute(sweep, touched)
        for payload in notify_payloads(touched):
            await conn.execute("select pg_notify($1, $2)", NOTIFY_CHANNEL, payload)
    return set(touched)


async def _project_grouped(conn: asyncpg.Connection, events: list[ev.HistoryEvent]) -> None:
    """One ``executemany`` per statement, statements in lifecycle order (``STATEMENTS``).

    Every statement is guarded by ``seq``, so the final rows equal those of applying the
    events one by one: an earlier step skipped because a later one (a new attempt's
    dispatch) already wrote the row is one that the later step overwrites anyway.
    """
    grouped: dict[str, list[tuple[Any, ...]]] = {sql: [] for sql in STATEMENTS}
    bumps: dict[str, tuple[Any, ...]] = {}
    for e in events:
        for sql, args in plan(e):
            if sql is BUMP_WORKFLOW:
                bumps[e.workflow_id] = args  # events are sorted: the last has the top seq
            else:
                grouped[sql].append(args)
    grouped[BUMP_WORKFLOW] = list(bumps.values())
    for sql in STATEMENTS:
        if grouped[sql]:
            await conn.executemany(sql, grouped[sql])


async def _project_carefully(conn: asyncpg.Connection, e: ev.HistoryEvent) -> None:
    try:
        async with conn.transaction():  # a savepoint
            await _project_one(conn, e)
    except UNSTORABLE as error:
        log.warning("workflow %s seq %d: %s; storing it sanitised", e.workflow_id, e.seq, error)
        async with conn.transaction():
            await _project_one(conn, sanitize(e))


async def _project_one(conn: asyncpg.Connection, e: ev.HistoryEvent) -> None:
    for sql, args in plan(e):
        await conn.execute(sql, *args)


MAX_DEPTH = 64


def sanitize(event: ev.HistoryEvent) -> ev.HistoryEvent:
    """The event with NUL characters replaced by U+FFFD and JSON deeper than
    ``MAX_DEPTH`` levels replaced by a marker string."""
    body = event.body
    fields = {f.name: _clean(getattr(body, f.name), 0) for f in dataclasses.fields(body)}
    return ev.HistoryEvent(event.workflow_id, event.seq, type(body)(**fields))


def _clean(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if depth >= MAX_DEPTH and isinstance(value, dict | list):
        return f"<nested deeper than {MAX_DEPTH} levels>"
    if isinstance(value, dict):
        return {_clean(str(k), depth): _clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v, depth + 1) for v in value]
    return value


STATEMENTS = (*CORE_STATEMENTS, *PAUSE_STATEMENTS, *KIND_STATEMENTS, *CODE_STATEMENTS,
              *RESTART_STATEMENTS)
"""Every statement, in the order a batch applies them: the core ones (a task's lifecycle
order), a pause's (``pauses.py``), then the node kinds' (``kinds.py``), a code
workflow's sleeps and signal waits (``code_steps.py``), then a restart's
(``restarts.py``)."""

PROJECTED_EVENTS = frozenset({*NODE_AND_TASK_STEPS, *KIND_STEPS, *SCHEDULE_STEPS,
                              *PAUSE_EVENTS})
"""The event types with statements of their own beside their ``events`` row, by the
tables that give them (the workflow's start and end: ``core_plan``). Every node kind's
events are here (``tests/unit/headwater/core/test_kind_registry.py``)."""


def plan(e: ev.HistoryEvent) -> Statements:
    """The statements that project one event, with their arguments: the core ones, then
    those of the node kinds, of a code workflow's own steps, of a restart and of a
    pause."""
    return [*core_plan(e), *kind_plan(e), *code_plan(e), *restart_plan(e), *pause_plan(e)]


RETRYABLE = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError, *UNAVAILABLE)
"""Failures the projector waits out: a deadlock with another projector, or PostgreSQL
unavailable (stopped, restarting, out of connections)."""
MAX_BACKOFF_S = 5.0
STOP_GRACE_S = 10.0
"""How long a cancelled projector may take to finish its batch, seconds."""


class Projector:
    """Consumes ``events`` in its own consumer group and keeps the projection current.

    A batch is committed only after it is projected. Failures (a deadlock with another
    projector during a rebalance, PostgreSQL down or restarting) are retried with
    backoff; a commit refused because the group rebalanced meanwhile (the broker was
    lost, or the projection waited longer than ``max.poll.interval.ms``) leaves the batch
    to the partitions' next owner; the projector never stops the process it runs in.
    Cancelled (the process stopping), it first finishes the batch in hand, projected and
    committed, for up to ``STOP_GRACE_S``, then leaves its group.
    """

    def __init__(self, settings: CommonSettings, pool: asyncpg.Pool) -> None:
        self.settings = settings
        self.pool = pool
        self.projected = 0

    def group_id(self) -> str:
        """The projector's consumer group."""
        return self.settings.topics.projection_group

    async def run(self) -> None:
        """Project until cancelled."""
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.bootstrap,
            **aiokafka_security(self.settings.kafka_security),
            group_id=self.group_id(),
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=self.settings.max_message_bytes,
            fetch_max_bytes=self.settings.max_message_bytes * 4,
        )
        part = PROBES.part("projector")
        consumer.subscribe([self.settings.topics.events], listener=_Readiness(part))
        async with started(consumer):
            while True:
                batches = await consumer.getmany(timeout_ms=200, max_records=2000)
                if not batches:
                    continue
                metrics.fetched(consumer, batches)
                events: list[ev.HistoryEvent] = []
                for records in batches.values():
                    events.extend(_history_events(records))
                try:
                    await finish(self._project_and_commit(consumer, events), STOP_GRACE_S)
                except CommitFailedError as e:  # rebalanced meanwhile: go on in the group
                    log.warning("%d events projected but not committed (%s); the partitions' "
                                "next owner projects them again, which changes nothing",
                                len(events), e.args[-1] if e.args else e)
                except Unfinished as e:
                    log.warning("stopping with a batch of %d events not projected or not "
                                "committed (%s); it is projected again later", len(events), e)
                    raise asyncio.CancelledError from e

    async def _project_and_commit(self, consumer: AIOKafkaConsumer,
                                  events: list[ev.HistoryEvent]) -> None:
        await self._project_with_retries(events)
        await consumer.commit()

    async def _project_with_retries(self, events: list[ev.HistoryEvent]) -> None:
        # One order for every projector (by workflow, then seq), so that two of them
        # during a rebalance take row locks in the same order and cannot deadlock.
        events.sort(key=lambda e: (e.workflow_id, e.seq))
        delay, started_s = 0.1, time.perf_counter()
        while True:
            try:
                async with self.pool.acquire() as conn:
                    await project(conn, events)
                self.projected += len(events)
                metrics.projected(len(events), started_s)
                return
            except RETRYABLE as e:
                log.warning("projection failed (%s: %s); retrying in %.1f s",
                            type(e).__name__, e, delay)
            except Exception:
                log.exception("projection failed; retrying in %.1f s", delay)
            await asyncio.sleep(delay)
            delay = min(MAX_BACKOFF_S, delay * 2)


class _Readiness(ConsumerRebalanceListener):  # type: ignore[misc]
    """Tells the projector's readiness (``probes``) of its group's rebalances."""

    def __init__(self, part: Part) -> None:
        self.part = part

    async def on_partitions_revoked(self, revoked: set[Any]) -> None:
        self.part.rebalancing()

    async def on_partitions_assigned(self, assigned: set[Any]) -> None:
        self.part.assigned()


def _history_events(records: Iterable[Any]) -> list[ev.HistoryEvent]:
    """The ``HistoryEvent`` records of a fetch, in order; any other record (undecodable,
    or a record of another type with a known schema) is logged and skipped."""
    out: list[ev.HistoryEvent] = []
    for r in records:
        try:
            event = codec.decode(r.value)
        except DecodeError as e:
            log.error("undecodable record on %s@%d: %s", r.topic, r.offset, e)
            continue
        if isinstance(event, ev.HistoryEvent):
            out.append(event)
        else:
            log.error("a %s record on %s@%d, not a history event: skipped",
                      type(event).__name__, r.topic, r.offset)
    return out


async def run_projector(settings: CommonSettings) -> None:
    """Keep the projection current until cancelled, with the task logs' reader
    (``task_logs.LogProjector``), the refused signals of ``dlq``
    (``refusals.follow_refusals``) and the webhooks' deliverer (``services.webhooks``,
    unless ``HEADWATER_WEBHOOKS=off``) beside it on the same pool, restarting all after any
    failure; serve the process's metrics unless it does already
    (``metrics.serve_from_env``)."""
    metrics.serve_from_env()
    while True:
        try:
            pool = await connect_pool(settings.pg_dsn, timeout_s=float("inf"),
                                      auth=settings.pg_auth)
            try:
                async with asyncio.TaskGroup() as group:  # one fails: all start again
                    group.create_task(Projector(settings, pool).run())
                    group.create_task(LogProjector(settings, pool).run())
                    group.create_task(follow_refusals(settings, pool))
                    group.create_task(run_webhooks(settings, pool))
            finally:
                await pool.close()
        except asyncio.CancelledError:
            raise
        except Exception:  # an ExceptionGroup from the TaskGroup too
            log.exception("the projector stopped; restarting in 1 s")
            await asyncio.sleep(1.0)
