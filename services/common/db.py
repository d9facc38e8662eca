"""The PostgreSQL projection's schema. The projection can be dropped and rebuilt from
the events topic at any time (docs/architecture.md §1)."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import orjson

NOTIFY_CHANNEL = "headwater_events"

UNAVAILABLE: tuple[type[Exception], ...] = (
    OSError,  # refused, reset, unreachable; TimeoutError is an OSError too
    asyncpg.PostgresConnectionError,  # SQLSTATE class 08: the connection failed or was lost
    asyncpg.InterfaceError,  # the connection or the pool is closed
    asyncpg.exceptions.OperatorInterventionError,  # class 57P: shutting down, starting up
    asyncpg.exceptions.InsufficientResourcesError,  # class 53: too many connections, disk full
)
"""Errors that mean PostgreSQL cannot answer now (not that a statement is wrong): retry
later (the gateway answers 503, the projector tries again)."""

SCHEMA = """
create table if not exists workflows (
    workflow_id text primary key,
    name text not null default '',
    tenant text,
    status text not null,
    seq bigint not null default 0,
    spec jsonb,
    input jsonb,
    output jsonb,
    error text not null default '',
    body_hash text,
    created_at timestamptz not null,
    updated_at timestamptz not null
);
create index if not exists workflows_list on workflows (created_at desc, workflow_id desc);
create table if not exists nodes (
    workflow_id text not null,
    node text not null,
    status text not null,
    total integer,
    error text not null default '',
    seq bigint not null,
    primary key (workflow_id, node)
);
create table if not exists tasks (
    workflow_id text not null,
    task_key text not null,
    node text not null,
    idx integer,
    attempt integer not null,
    status text not null,
    task text not null default '',
    queue text not null default '',
    progress double precision,
    message text not null default '',
    error text not null default '',
    worker text not null default '',
    dispatched_at timestamptz,
    started_at timestamptz,
    finished_at timestamptz,
    seq bigint not null,
    primary key (workflow_id, task_key)
);
create table if not exists events (
    workflow_id text not null,
    seq bigint not null,
    type text not null,
    at timestamptz not null,
    data jsonb not null,
    primary key (workflow_id, seq)
);
"""


async def init_connection(conn: asyncpg.Connection) -> None:
    """jsonb in and out as Python values, through orjson (every connection to the
    projection is set up so, so that all of them store the same bytes)."""
    await conn.set_type_codec(
        "jsonb", schema="pg_catalog", format="text",
        encoder=lambda v: orjson.dumps(v).decode(), decoder=orjson.loads,
    )


async def connect_pool(dsn: str, timeout_s: float = 60.0, max_size: int = 10) -> asyncpg.Pool:
    """Open a pool and create the schema, retrying while PostgreSQL starts.

    Raises:
        OSError or asyncpg.PostgresError: still unreachable after ``timeout_s`` seconds.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            pool = await asyncpg.create_pool(dsn, min_size=1, max_size=max_size,
                                             init=init_connection)
            break
        except (OSError, asyncpg.CannotConnectNowError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    # Several services may create the schema at once; serialise with an advisory lock.
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("select pg_advisory_xact_lock(7420001)")
        await conn.execute(SCHEMA)
    return pool
