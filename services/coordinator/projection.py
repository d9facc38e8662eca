"""The PostgreSQL projection of ``events``: workflows, nodes, tasks and the event log.

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
from datetime import UTC, datetime
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer

from headwater import codec
from headwater import events as ev
from headwater.errors import DecodeError
from headwater.state import NodeStatus, TaskStatus, WorkflowStatus
from headwater.topics import task_key
from services.common.db import NOTIFY_CHANNEL, connect_pool
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
    touched: set[str] = set()
    async with conn.transaction():
        for e in events:
            if careful:
                changed = await _project_carefully(conn, e)
            else:
                changed = await _project_one(conn, e)
            if changed:
                touched.add(e.workflow_id)
        for payload in notify_payloads(sorted(touched)):
            await conn.execute("select pg_notify($1, $2)", NOTIFY_CHANNEL, payload)
    return touched


async def _project_carefully(conn: asyncpg.Connection, e: ev.HistoryEvent) -> bool:
    try:
        async with conn.transaction():  # a savepoint
            return await _project_one(conn, e)
    except UNSTORABLE as error:
        log.warning("workflow %s seq %d: %s; storing it sanitised", e.workflow_id, e.seq, error)
        async with conn.transaction():
            return await _project_one(conn, sanitize(e))


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


async def _project_one(conn: asyncpg.Connection, e: ev.HistoryEvent) -> bool:
    b = e.body
    inserted = await conn.fetchval(
        "insert into events (workflow_id, seq, type, at, data) values ($1, $2, $3, $4, $5)"
        " on conflict do nothing returning 1",
        e.workflow_id, e.seq, e.type, ts(b.at_ms), b,
    )
    if not inserted:
        return False  # a duplicate: its effects are already here
    wid, seq, at = e.workflow_id, e.seq, ts(b.at_ms)
    if isinstance(b, ev.WorkflowAccepted):
        name = b.spec.get("name", "") if isinstance(b.spec, dict) else ""
        await conn.execute(
            "insert into workflows (workflow_id, name, tenant, status, seq, spec, input,"
            " created_at, updated_at) values ($1, $2, $3, 'running', $4, $5, $6, $7, $7)"
            " on conflict (workflow_id) do update set name = excluded.name,"
            " tenant = coalesce(excluded.tenant, workflows.tenant), spec = excluded.spec,"
            " input = excluded.input,"
            " created_at = least(workflows.created_at, excluded.created_at),"
            " status = case when workflows.seq < excluded.seq then 'running'"
            " else workflows.status end,"
            " seq = greatest(workflows.seq, excluded.seq),"
            " updated_at = greatest(workflows.updated_at, excluded.updated_at)",
            wid, str(name), b.tenant, seq, b.spec, b.input, at,
        )
        return True
    if type(b) in _TERMINAL:
        await _project_terminal(conn, e, _TERMINAL[type(b)])
        return True
    await conn.execute(
        "update workflows set seq = $2, updated_at = $3 where workflow_id = $1 and seq < $2",
        wid, seq, at,
    )
    await _project_task_or_node(conn, e)
    return True


async def _project_terminal(conn: asyncpg.Connection, e: ev.HistoryEvent,
                            status: WorkflowStatus) -> None:
    b = e.body
    output = b.output if isinstance(b, ev.WorkflowSucceeded) else None
    error = b.error if isinstance(b, ev.WorkflowFailed) else (
        b.reason if isinstance(b, ev.WorkflowCancelled) else "")
    await conn.execute(
        "insert into workflows (workflow_id, status, seq, output, error, created_at, updated_at)"
        " values ($1, $2, $3, $4, $5, $6, $6) on conflict (workflow_id) do update set"
        " status = excluded.status, seq = excluded.seq, output = excluded.output,"
        " error = excluded.error, updated_at = excluded.updated_at"
        " where workflows.seq < excluded.seq",
        e.workflow_id, status.value, e.seq, output, error, ts(b.at_ms),
    )
    await conn.execute(
        "update tasks set status = 'cancelled', seq = $2 where workflow_id = $1"
        " and status = any($3::text[]) and seq < $2", e.workflow_id, e.seq, _OPEN_TASKS)
    await conn.execute(
        "update nodes set status = 'cancelled', seq = $2 where workflow_id = $1"
        " and status = any($3::text[]) and seq < $2", e.workflow_id, e.seq, _OPEN_NODES)


_TASK_UPDATES: dict[type, str] = {
    ev.TaskStarted: "status = 'running', worker = $4, started_at = $5",
    ev.TaskProgressed: "progress = $4, message = $5",
    ev.TaskSucceeded: "status = 'succeeded', progress = 1.0, finished_at = $4",
    ev.TaskFailed: "status = 'failed', error = $4, finished_at = $5",
    ev.TimerScheduled: "status = 'retry_wait', attempt = $4",
}


async def _project_task_or_node(conn: asyncpg.Connection, e: ev.HistoryEvent) -> None:
    b, wid, seq, at = e.body, e.workflow_id, e.seq, ts(e.body.at_ms)
    if isinstance(b, ev.TaskDispatched):
        await conn.execute(
            "insert into tasks (workflow_id, task_key, node, idx, attempt, status, task, queue,"
            " dispatched_at, seq) values ($1, $2, $3, $4, $5, 'dispatched', $6, $7, $8, $9)"
            " on conflict (workflow_id, task_key) do update set attempt = excluded.attempt,"
            " status = excluded.status, dispatched_at = excluded.dispatched_at, error = '',"
            " progress = null, message = '', started_at = null, finished_at = null,"
            " seq = excluded.seq where tasks.seq < excluded.seq",
            wid, task_key(b.node, b.index), b.node, b.index, b.attempt, b.task, b.queue, at, seq,
        )
        await _upsert_node(conn, wid, b.node, NodeStatus.RUNNING.value, None, "", seq)
    elif isinstance(b, ev.MapExpanded):
        await _upsert_node(conn, wid, b.node, NodeStatus.RUNNING.value, b.count, "", seq)
    elif isinstance(b, ev.NodeFinished):
        await _upsert_node(conn, wid, b.node, b.status, None, b.error, seq)
    elif type(b) in _TASK_UPDATES:
        args: tuple[object, ...]
        if isinstance(b, ev.TaskStarted):
            args = (b.worker, at)
        elif isinstance(b, ev.TaskProgressed):
            args = (b.fraction, b.message)
        elif isinstance(b, ev.TaskSucceeded):
            args = (at,)
        elif isinstance(b, ev.TaskFailed):
            args = (b.error, at)
        else:
            assert isinstance(b, ev.TimerScheduled)
            args = (b.attempt,)
        await conn.execute(
            f"update tasks set {_TASK_UPDATES[type(b)]}, seq = $3"
            " where workflow_id = $1 and task_key = $2 and seq < $3",
            wid, task_key(b.node, b.index), seq, *args,
        )


async def _upsert_node(conn: asyncpg.Connection, wid: str, node: str, status: str,
                       total: int | None, error: str, seq: int) -> None:
    await conn.execute(
        "insert into nodes (workflow_id, node, status, total, error, seq)"
        " values ($1, $2, $3, $4, $5, $6) on conflict (workflow_id, node) do update set"
        " status = excluded.status, total = coalesce(excluded.total, nodes.total),"
        " error = excluded.error, seq = excluded.seq where nodes.seq < excluded.seq",
        wid, node, status, total, error, seq,
    )


RETRYABLE = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError,
             asyncpg.PostgresConnectionError, OSError)
MAX_BACKOFF_S = 5.0


class Projector:
    """Consumes ``events`` in its own consumer group and keeps the projection current.

    A batch is committed only after it is projected. Failures (a deadlock with another
    projector during a rebalance, PostgreSQL restarting) are retried with backoff; the
    projector never stops the process it runs in.
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
                await self._project_with_retries(events)
                await consumer.commit()
        finally:
            await consumer.stop()

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
