"""Projection retention: the PostgreSQL rows of runs that ended long ago are deleted.

``HEADWATER_PROJECTION_RETENTION`` is ``keep`` (the default: the projection keeps every
run, as the events topic does by default) or ``purge``; with ``purge``, the runs whose
status is terminal and whose last change (``workflows.updated_at``) is older than
``HEADWATER_PROJECTION_RETENTION_S`` seconds (default 604800, a week) lose their rows in
every table keyed by the run (``services/common/schema.py``: ``workflows``, ``nodes``,
``tasks``, ``events``, ``waits``, ``signals``, ``loop_steps``, ``signal_receipts``, and
its task logs, ``task_logs`` and ``task_log_ends``, and ``blob_refs``, the blobs it
refers to), in one statement, so a
crash leaves a run whole or gone; the same statement keeps the id in ``retired_ids``
(its tenant, status and hashes), so a later submission of the id is answered as the
coordinator takes it (the same request: the same run; another body: 409), never with a
claim that no run would ever update. Schedules and definitions are not runs and stay.
Then the blobs no run refers to any more, stored more than ``HEADWATER_BLOB_GRACE_S``
seconds ago, are deleted (``services/common/blobs/collect.py``), with their objects when
the blob store is a bucket (``HEADWATER_BLOB_STORE=s3``).

It runs as a periodic job of its own: ``python -m services.projector.retention``. The
coordinator's table has its own retention (``services/coordinator/retention.py``) and
the events topic its own (``retention.ms``, ``HEADWATER_EVENTS_RETENTION_MS``, set where
the coordinator creates it: ``services/coordinator/app.py``, ``prepare``). A projection
rebuilt from the events topic (``services/projector/rebuild.py``) projects again any run
the topic still holds.
"""

from __future__ import annotations

import asyncio
import logging

import asyncpg

from services.common.blobs.claims import store_from_env
from services.common.blobs.collect import collect_once, grace_from_env
from services.common.blobs.s3 import S3Objects, open_s3
from services.common.db import connect as pg_connect
from services.common.settings import env_float, env_str

log = logging.getLogger(__name__)

RUN_TABLES = ("nodes", "tasks", "events", "waits", "signals", "loop_steps", "task_logs",
              "task_log_ends", "signal_receipts", "blob_refs")
"""The tables whose rows belong to one run, besides ``workflows``."""
TERMINAL = ["succeeded", "failed", "cancelled"]
BATCH = 1000
"""Most runs one statement deletes; the job goes on until none is left."""


def purge_statement() -> str:
    """One statement that deletes up to ``$3`` ended runs (statuses ``$2``) last changed
    more than ``$1`` seconds ago, with their rows in ``RUN_TABLES``; it returns their ids."""
    doomed = ("select workflow_id from workflows where status = any($2::text[]) and "
              "updated_at < now() - $1::float8 * interval '1 second' "
              "order by updated_at limit $3 for update skip locked")
    parts = [f"d_{t} as (delete from {t} where workflow_id in (select workflow_id from doomed))"
             for t in RUN_TABLES]
    retired = ("retired as (insert into retired_ids (workflow_id, tenant, status, "
               "request_hash, body_hash) select workflow_id, tenant, status, request_hash, "
               "body_hash from workflows where workflow_id in (select workflow_id from doomed)"
               " on conflict (workflow_id) do nothing)")
    return (f"with doomed as ({doomed}), {retired}, {', '.join(parts)} delete from workflows"
            " where workflow_id in (select workflow_id from doomed) returning workflow_id")


async def purge_once(conn: asyncpg.Connection, retention_s: float) -> int:
    """Delete every ended run older than ``retention_s`` seconds, ``BATCH`` at a time.

    Returns:
        How many runs were deleted.
    """
    total, statement = 0, purge_statement()
    while True:
        rows = await conn.fetch(statement, retention_s, TERMINAL, BATCH)
        total += len(rows)
        if len(rows) < BATCH:
            return total


def projection_retention() -> tuple[bool, float]:
    """Whether to purge (``HEADWATER_PROJECTION_RETENTION``) and after how long, seconds.

    Raises:
        ValueError: a mode other than ``keep`` or ``purge``, or a negative period.
    """
    mode = env_str("PROJECTION_RETENTION", "keep").strip().lower()
    if mode not in ("keep", "purge"):
        raise ValueError(f"HEADWATER_PROJECTION_RETENTION={mode!r}: keep or purge")
    seconds = env_float("PROJECTION_RETENTION_S", 604_800.0)
    if seconds < 0:
        raise ValueError("HEADWATER_PROJECTION_RETENTION_S must be at least 0")
    return mode == "purge", seconds


async def run(dsn: str, interval_s: float = 60.0) -> None:
    """Purge every ``interval_s`` seconds while ``purge`` is set, then collect the blobs
    no run refers to (returns at once on ``keep``: no run's references go)."""
    purge, seconds = projection_retention()
    grace_s = grace_from_env()
    s3 = store_from_env()
    if not purge:
        log.info("HEADWATER_PROJECTION_RETENTION=keep: the projection keeps every run")
        return
    objects = None if s3 is None else await open_s3(s3)
    try:
        while True:
            await _once(dsn, seconds, grace_s, objects)
            await asyncio.sleep(interval_s)
    finally:
        if objects is not None:
            await objects.close()


async def _once(dsn: str, seconds: float, grace_s: float, objects: S3Objects | None) -> None:
    """One purge and collection (``objects``: the bucket whose objects go with their rows)."""
    conn = await pg_connect(dsn)
    try:
        deleted = await purge_once(conn, seconds)
        blobs, size = await collect_once(conn, grace_s,
                                         None if objects is None else objects.delete)
    finally:
        await conn.close()
    if deleted:
        log.info("deleted the projection rows of %d runs past retention", deleted)
    if blobs:
        log.info("deleted %d blobs (%d bytes) no run refers to", blobs, size)


if __name__ == "__main__":  # pragma: no cover - a process entry point
    logging.basicConfig(level=logging.INFO)
    asyncio.run(run(env_str("PG_DSN", "")))
