"""The projector's writer: ``events`` projected into PostgreSQL (workflows, nodes, tasks
and the event log), by ``Projector`` in its own consumer group. It runs inside the
coordinator's process (``HEADWATER_PROJECTION=on``, ``run_projector``) or alone
(``python -m services.projector``); a rebuild (``rebuild.py``) uses its ``project``.

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
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import CommitFailedError

from headwater import codec
from headwater.core import events as ev
from headwater.core.idempotency import body_hash
from headwater.core.ids import task_key
from headwater.core.status import NodeStatus, TaskStatus, WorkflowStatus
from headwater.errors import DecodeError
from services.common.db import NOTIFY_CHANNEL, UNAVAILABLE, connect_pool
from services.common.finishing import Unfinished, finish
from services.common.settings import CommonSettings

log = logging.getLogger(__name__)

_OPEN_TASKS = [s.value for s in TaskStatus if not s.terminal]
_OPEN_NODES = [s.value for s in NodeStatus if not s.terminal]
_TERMINAL = {
    ev.WorkflowSucceeded: WorkflowStatus.SUCCEEDED,
    ev.WorkflowFailed: WorkflowStatus.FAILED,
    ev.WorkflowCancelled: WorkflowStatus.CANCELLED,
}


def ts(at_ms: int) -> datetime:
    """Milliseconds since the epoch as an aware UTC datetime."""
    return datetime.fromtimestamp(at_ms / 1000, tz=UTC)


NOTIFY_MAX_BYTES = 7900  # PostgreSQL's NOTIFY payload limit is 8000 bytes


def notify_payloads(workflow_ids: list[str]) -> list[str]:
    """Comma-joined workflow ids, split into payloads that fit a NOTIFY."""
    payloads: list[str] = []
    current: list[str] = []
    size = 0
    for wid in workflow_ids:
        n = len(wid.encode()) + 1
        if current and size + n > NOTIFY_MAX_BYTES:
            payloads.append(",".join(current))
            current, size = [], 0
        current.append(wid)
        size += n
    if current:
        payloads.append(",".join(current))
    return payloads


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


INSERT_EVENT = (
    "insert into events (workflow_id, seq, type, at, data) values ($1, $2, $3, $4, $5)"
    " on conflict do nothing")
# created_at: the acceptance's time (the coordinator's clock, as the log has it), not the
# gateway's claim's, so that a projection rebuilt from the log equals the live one.
# body_hash: of the body that runs (the gateway's claim may have hashed another one that
# lost a race with a submission straight on Kafka), from the decoded record, so that the
# same body resubmitted over HTTP matches whatever PostgreSQL does to its numbers.
UPSERT_ACCEPTED = (
    "insert into workflows (workflow_id, name, tenant, status, seq, spec, input,"
    " body_hash, created_at, updated_at)"
    " values ($1, $2, $3, 'running', $4, $5, $6, $8, $7, $7)"
    " on conflict (workflow_id) do update set name = excluded.name, body_hash = excluded.body_hash,"
    " tenant = coalesce(excluded.tenant, workflows.tenant), spec = excluded.spec,"
    " input = excluded.input, created_at = excluded.created_at,"
    " status = case when workflows.seq < excluded.seq then 'running' else workflows.status end,"
    " seq = greatest(workflows.seq, excluded.seq),"
    " updated_at = greatest(workflows.updated_at, excluded.updated_at)")
BUMP_WORKFLOW = (
    "update workflows set seq = $2, updated_at = $3 where workflow_id = $1 and seq < $2")
UPSERT_DISPATCHED = (
    "insert into tasks (workflow_id, task_key, node, idx, attempt, status, task, queue,"
    " dispatched_at, seq) values ($1, $2, $3, $4, $5, 'dispatched', $6, $7, $8, $9)"
    " on conflict (workflow_id, task_key) do update set attempt = excluded.attempt,"
    " status = excluded.status, dispatched_at = excluded.dispatched_at, error = '',"
    " progress = null, message = '', worker = '', started_at = null, finished_at = null,"
    " seq = excluded.seq where tasks.seq < excluded.seq")
UPSERT_NODE = (
    "insert into nodes (workflow_id, node, status, total, error, seq)"
    " values ($1, $2, $3, $4, $5, $6) on conflict (workflow_id, node) do update set"
    " status = case when nodes.seq < excluded.seq then excluded.status else nodes.status end,"
    " error = case when nodes.seq < excluded.seq then excluded.error else nodes.error end,"
    " total = coalesce(nodes.total, excluded.total),"  # a map's size never changes
    " seq = greatest(nodes.seq, excluded.seq)")
_TASK = " where workflow_id = $1 and task_key = $2 and seq < $3"
TASK_STARTED = "update tasks set status = 'running', worker = $4, started_at = $5, seq = $3" + _TASK
TASK_PROGRESSED = "update tasks set progress = $4, message = $5, seq = $3" + _TASK
TASK_FAILED = ("update tasks set status = 'failed', error = $4, finished_at = $5, seq = $3"
               + _TASK)
TASK_RETRY_WAIT = "update tasks set status = 'retry_wait', attempt = $4, seq = $3" + _TASK
TASK_SUCCEEDED = ("update tasks set status = 'succeeded', progress = 1.0, finished_at = $4,"
                  " seq = $3" + _TASK)
TASK_CANCELLED = ("update tasks set status = 'cancelled', error = $4, finished_at = $5,"
                  " seq = $3" + _TASK)
UPSERT_TERMINAL = (
    "insert into workflows (workflow_id, status, seq, output, error, created_at, updated_at)"
    " values ($1, $2, $3, $4, $5, $6, $6) on conflict (workflow_id) do update set"
    " status = excluded.status, seq = excluded.seq, output = excluded.output,"
    " error = excluded.error, updated_at = excluded.updated_at"
    " where workflows.seq < excluded.seq")
CANCEL_OPEN_TASKS = (
    "update tasks set status = 'cancelled', seq = $2 where workflow_id = $1"
    " and status = any($3::text[]) and seq < $2")
CANCEL_OPEN_NODES = (
    "update nodes set status = 'cancelled', seq = $2 where workflow_id = $1"
    " and status = any($3::text[]) and seq < $2")
STATEMENTS = (INSERT_EVENT, UPSERT_ACCEPTED, BUMP_WORKFLOW, UPSERT_DISPATCHED, UPSERT_NODE,
              TASK_STARTED, TASK_PROGRESSED, TASK_FAILED, TASK_RETRY_WAIT, TASK_SUCCEEDED,
              TASK_CANCELLED, UPSERT_TERMINAL, CANCEL_OPEN_TASKS, CANCEL_OPEN_NODES)
"""Every statement, in the order a batch applies them (a task's lifecycle order)."""


Statements = list[tuple[str, tuple[Any, ...]]]
"""Statements with their arguments, in order."""
_NODE_AND_TASK_STEPS: dict[type, Callable[[str, int, datetime, Any], Statements]] = {
    ev.TaskDispatched: lambda wid, seq, at, b: [
        (UPSERT_DISPATCHED, (wid, task_key(b.node, b.index), b.node, b.index, b.attempt,
                             b.task, b.queue, at, seq)),
        (UPSERT_NODE, (wid, b.node, NodeStatus.RUNNING.value, None, "", seq))],
    ev.MapExpanded: lambda wid, seq, at, b: [
        (UPSERT_NODE, (wid, b.node, NodeStatus.RUNNING.value, b.count, "", seq))],
    ev.NodeFinished: lambda wid, seq, at, b: [
        (UPSERT_NODE, (wid, b.node, b.status, None, b.error, seq))],
    ev.TaskStarted: lambda wid, seq, at, b: [
        (TASK_STARTED, (wid, task_key(b.node, b.index), seq, b.worker, at))],
    ev.TaskProgressed: lambda wid, seq, at, b: [
        (TASK_PROGRESSED, (wid, task_key(b.node, b.index), seq, b.fraction, b.message))],
    ev.TaskFailed: lambda wid, seq, at, b: [
        (TASK_FAILED, (wid, task_key(b.node, b.index), seq, b.error, at))],
    ev.TimerScheduled: lambda wid, seq, at, b: [
        (TASK_RETRY_WAIT, (wid, task_key(b.node, b.index), seq, b.attempt))],
    ev.TaskSucceeded: lambda wid, seq, at, b: [
        (TASK_SUCCEEDED, (wid, task_key(b.node, b.index), seq, at))],
    ev.TaskCancelled: lambda wid, seq, at, b: [
        (TASK_CANCELLED, (wid, task_key(b.node, b.index), seq, b.reason, at))],
}
"""Body type -> the node and task statements of an event of a running workflow (after
its ``BUMP_WORKFLOW``). Heartbeats, checkpoints, streamed chunks and discarded reports
have none: they live in the event log (and on SSE) only."""


def plan(e: ev.HistoryEvent) -> Statements:
    """The statements that project one event, with their arguments."""
    b, wid, seq, at = e.body, e.workflow_id, e.seq, ts(e.body.at_ms)
    steps: Statements = [(INSERT_EVENT, (wid, seq, e.type, at, b))]
    if isinstance(b, ev.WorkflowAccepted):
        name = b.spec.get("name", "") if isinstance(b.spec, dict) else ""
        steps.append((UPSERT_ACCEPTED, (wid, str(name), b.tenant, seq, b.spec, b.input, at,
                                        body_hash(b.spec, b.input, b.tenant))))
        return steps
    if type(b) in _TERMINAL:
        return [*steps, *_terminal_steps(wid, seq, at, b)]
    steps.append((BUMP_WORKFLOW, (wid, seq, at)))
    node_and_task = _NODE_AND_TASK_STEPS.get(type(b))
    if node_and_task is not None:
        steps += node_and_task(wid, seq, at, b)
    return steps


def _terminal_steps(wid: str, seq: int, at: datetime, b: Any) -> Statements:
    """A workflow's end: its row's status, output or error, and every node and task
    still open cancelled."""
    output = b.output if isinstance(b, ev.WorkflowSucceeded) else None
    error = b.error if isinstance(b, ev.WorkflowFailed) else (
        b.reason if isinstance(b, ev.WorkflowCancelled) else "")
    return [(UPSERT_TERMINAL, (wid, _TERMINAL[type(b)].value, seq, output, error, at)),
            (CANCEL_OPEN_TASKS, (wid, seq, _OPEN_TASKS)),
            (CANCEL_OPEN_NODES, (wid, seq, _OPEN_NODES))]


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
            self.settings.topics.events,
            bootstrap_servers=self.settings.bootstrap,
            group_id=self.group_id(),
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=self.settings.max_message_bytes,
            fetch_max_bytes=self.settings.max_message_bytes * 4,
        )
        await consumer.start()
        try:
            while True:
                batches = await consumer.getmany(timeout_ms=200, max_records=2000)
                if not batches:
                    continue
                events: list[ev.HistoryEvent] = []
                for records in batches.values():
                    for r in records:
                        try:
                            events.append(codec.decode(r.value))
                        except DecodeError as e:
                            log.error("undecodable record on %s@%d: %s", r.topic, r.offset, e)
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
        finally:
            await consumer.stop()

    async def _project_and_commit(self, consumer: AIOKafkaConsumer,
                                  events: list[ev.HistoryEvent]) -> None:
        await self._project_with_retries(events)
        await consumer.commit()

    async def _project_with_retries(self, events: list[ev.HistoryEvent]) -> None:
        # One order for every projector (by workflow, then seq), so that two of them
        # during a rebalance take row locks in the same order and cannot deadlock.
        events.sort(key=lambda e: (e.workflow_id, e.seq))
        delay = 0.1
        while True:
            try:
                async with self.pool.acquire() as conn:
                    await project(conn, events)
                self.projected += len(events)
                return
            except RETRYABLE as e:
                log.warning("projection failed (%s: %s); retrying in %.1f s",
                            type(e).__name__, e, delay)
            except Exception:
                log.exception("projection failed; retrying in %.1f s", delay)
            await asyncio.sleep(delay)
            delay = min(MAX_BACKOFF_S, delay * 2)


async def run_projector(settings: CommonSettings) -> None:
    """Keep the projection current until cancelled, restarting after any failure."""
    while True:
        try:
            pool = await connect_pool(settings.pg_dsn, timeout_s=float("inf"))
            try:
                await Projector(settings, pool).run()
            finally:
                await pool.close()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the projector stopped; restarting in 1 s")
            await asyncio.sleep(1.0)
