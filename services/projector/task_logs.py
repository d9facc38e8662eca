"""The projector's reader of the ``logs`` topic: task attempts' lines into ``task_logs``.

A consumer group of its own (``Topics.logs_projection_group``), beside the events'
(``writer.Projector``), in the same process. Each fetch is written in one transaction:
one row per line (``insert ... on conflict do nothing``: a batch delivered twice writes
nothing more, line numbers are the worker's), one ``task_log_ends`` row per attempt whose
last batch came, then ``NOTIFY headwater_task_logs`` naming the workflows, which wakes the
gateway's log followers; then the offsets are committed. Text PostgreSQL cannot hold
(U+0000) is replaced by U+FFFD. Lines are never in the history: a rebuild of the
projection from the events topic leaves them as they are.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import asyncpg
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import CommitFailedError

from headwater import codec
from headwater.errors import DecodeError
from headwater.log_lines import TaskLogLines
from services.common.db import LOGS_NOTIFY_CHANNEL, notify_payloads
from services.common.finishing import Unfinished, finish
from services.common.kafka.client import started
from services.common.kafka.security import aiokafka_security
from services.common.logs_topic import ensure_logs_topic
from services.common.settings import CommonSettings

log = logging.getLogger(__name__)

NO_INDEX = -1
"""``task_logs.idx`` of a node without index (a key column cannot be null)."""
INSERT_LINE = (
    "insert into task_logs (workflow_id, node, idx, attempt, line, at, level, stream, "
    "logger, message) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) on conflict do nothing")
INSERT_END = ("insert into task_log_ends (workflow_id, node, idx, attempt, lines) "
              "values ($1, $2, $3, $4, $5) on conflict do nothing")
STOP_GRACE_S = 10.0
MAX_BACKOFF_S = 5.0


def _text(value: str) -> str:
    return value.replace("\x00", "\ufffd")


def rows(batches: Iterable[TaskLogLines]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The ``task_logs`` rows and the ``task_log_ends`` rows of ``batches``."""
    lines: list[tuple[Any, ...]] = []
    ends: list[tuple[Any, ...]] = []
    for b in batches:
        idx = NO_INDEX if b.index is None else b.index
        wid, node = _text(b.workflow_id), _text(b.node)
        for n, line in enumerate(b.lines, b.first_line):
            lines.append((wid, node, idx, b.attempt, n,
                          datetime.fromtimestamp(line.at_ms / 1000, UTC), _text(line.level),
                          _text(line.stream), _text(line.logger), _text(line.message)))
        if b.last:
            ends.append((wid, node, idx, b.attempt, b.first_line - 1 + len(b.lines)))
    return lines, ends


async def project_logs(conn: asyncpg.Connection, batches: list[TaskLogLines]) -> set[str]:
    """Write ``batches`` in one transaction and notify their workflows.

    Returns:
        The workflow ids of the batches.
    """
    lines, ends = rows(batches)
    touched = sorted({b.workflow_id for b in batches})
    async with conn.transaction():
        if lines:
            await conn.executemany(INSERT_LINE, lines)
        if ends:
            await conn.executemany(INSERT_END, ends)
        for payload in notify_payloads(touched):
            await conn.execute("select pg_notify($1, $2)", LOGS_NOTIFY_CHANNEL, payload)
    return set(touched)


def decoded(records: Iterable[Any]) -> list[TaskLogLines]:
    """The ``TaskLogLines`` of a fetch; any other record is logged and skipped."""
    out: list[TaskLogLines] = []
    for r in records:
        try:
            value = codec.decode(r.value)
        except DecodeError as e:
            log.error("undecodable record on %s@%d: %s", r.topic, r.offset, e)
            continue
        if isinstance(value, TaskLogLines):
            out.append(value)
        else:
            log.error("a %s record on %s@%d, not task log lines: skipped",
                      type(value).__name__, r.topic, r.offset)
    return out


class LogProjector:
    """Consumes ``logs`` in its own group and keeps ``task_logs`` current; failures are
    retried with backoff, as the events' projector does (``writer.Projector``).

    Args:
        settings: Kafka settings and the topic prefix.
        pool: the projection's pool.
    """

    def __init__(self, settings: CommonSettings, pool: asyncpg.Pool) -> None:
        self.settings = settings
        self.pool = pool
        self.projected = 0

    async def run(self) -> None:
        """Project until cancelled (the topic is created first if missing)."""
        await ensure_logs_topic(self.settings, timeout_s=float("inf"))
        consumer = AIOKafkaConsumer(
            self.settings.topics.logs,
            bootstrap_servers=self.settings.bootstrap,
            **aiokafka_security(self.settings.kafka_security),
            group_id=self.settings.topics.logs_projection_group,
            enable_auto_commit=False, auto_offset_reset="earliest",
            max_partition_fetch_bytes=self.settings.max_message_bytes,
            fetch_max_bytes=self.settings.max_message_bytes * 4)
        async with started(consumer):
            while True:
                fetched = await consumer.getmany(timeout_ms=200, max_records=500)
                batches = [b for records in fetched.values() for b in decoded(records)]
                if not fetched:
                    continue
                try:
                    await finish(self._project_and_commit(consumer, batches), STOP_GRACE_S)
                except CommitFailedError as e:
                    log.warning("task log lines projected but not committed (%s); their "
                                "next reader writes them again, which changes nothing", e)
                except Unfinished as e:
                    raise asyncio.CancelledError from e

    async def _project_and_commit(self, consumer: AIOKafkaConsumer,
                                  batches: list[TaskLogLines]) -> None:
        delay = 0.1
        while batches:
            try:
                async with self.pool.acquire() as conn:
                    await project_logs(conn, batches)
                self.projected += sum(len(b.lines) for b in batches)
                break
            except Exception as e:
                log.warning("projecting task log lines failed (%s: %s); retrying in %.1f s",
                            type(e).__name__, e, delay)
            await asyncio.sleep(delay)
            delay = min(MAX_BACKOFF_S, delay * 2)
        await consumer.commit()
