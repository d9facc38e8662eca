"""The PostgreSQL projection's schema. The projection can be dropped and rebuilt from
the events topic at any time (docs/architecture.md §1)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import orjson

from services.common.settings import PgAuth, pg_auth_from_env

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
create table if not exists waits (
    workflow_id text not null,
    wait_key text not null,
    node text not null,
    idx integer,
    signal text not null,
    status text not null,
    started_at timestamptz not null,
    timeout_at timestamptz,
    signal_id text not null default '',
    fields jsonb,
    ended_at timestamptz,
    seq bigint not null,
    primary key (workflow_id, wait_key)
);
create table if not exists signals (
    workflow_id text not null,
    seq bigint not null,
    name text not null,
    idx integer,
    signal_id text not null default '',
    status text not null,
    node text not null default '',
    reason text not null default '',
    fields jsonb,
    at timestamptz not null,
    consumed_seq bigint,
    primary key (workflow_id, seq)
);
create table if not exists loop_steps (
    workflow_id text not null,
    node text not null,
    step integer not null,
    tool text not null default '',
    input jsonb,
    finish boolean not null default false,
    output jsonb,
    spend double precision not null default 0,
    decided_at timestamptz not null,
    seq bigint not null,
    primary key (workflow_id, node, step)
);
do $$ begin
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'workflows' and column_name = 'parent_id')
    then
        alter table workflows add column parent_id text, add column parent_node text,
            add column parent_index integer, add column parent_attempt integer;
    end if;
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'nodes' and column_name = 'condition')
    then
        alter table nodes add column condition boolean, add column wake_at timestamptz;
    end if;
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'workflows' and column_name = 'definition')
    then
        alter table workflows add column definition text,
            add column definition_version integer;
    end if;
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'workflows'
                   and column_name = 'request_hash')
    then
        alter table workflows add column request_hash text;
        -- A claim not accepted yet holds its request's hash in body_hash.
        update workflows set request_hash = body_hash where seq = 0;
    end if;
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'workflows'
                   and column_name = 'generation')
    then
        alter table workflows add column generation integer not null default 1,
            add column restarted_seq bigint not null default 0;
    end if;
end $$;
create index if not exists workflows_parent on workflows (parent_id, parent_node, parent_index,
    parent_attempt) where parent_id is not null;
create index if not exists workflows_by_definition on workflows (definition, created_at desc,
    workflow_id desc) where definition is not null;
create index if not exists workflows_by_status on workflows (status, created_at desc,
    workflow_id desc);
create index if not exists workflows_by_name on workflows (name, created_at desc,
    workflow_id desc);
create index if not exists workflows_by_tenant on workflows (tenant, created_at desc,
    workflow_id desc) where tenant is not null;
create table if not exists schedules (
    workflow_id text primary key,
    name text not null,
    cron text not null,
    timezone text not null,
    definition text,
    definition_version integer,
    overlap text not null,
    catchup text not null,
    paused boolean not null default false,
    next_fire_at timestamptz,
    last_fire_at timestamptz,
    last_run_id text,
    fired integer not null default 0,
    skipped integer not null default 0,
    status text not null default 'running',
    created_at timestamptz not null,
    armed_seq bigint not null default 0,
    fired_seq bigint not null default 0,
    paused_seq bigint not null default 0
);
create index if not exists schedules_by_name on schedules (name, created_at desc);
"""
"""The projection's tables, created if missing. Columns added after a table's first
version come from ``alter table`` (checked first: an ``alter`` takes the table's
strongest lock even when it changes nothing, and every service runs this at start).
Tables of the node kinds: ``waits`` (one row per wait, ``node`` or ``node[index]``),
``signals`` (one per recorded ``SignalSent`` or ``SignalDiscarded``, by ``seq``) and
``loop_steps`` (one per decided step); ``workflows.parent_*`` link a child to its parent,
``nodes.condition`` and ``nodes.wake_at`` hold a ``when`` outcome and a sleep's wake-up.
``workflows.definition`` and ``definition_version`` name the registered definition a run
was resolved from (null for an inline spec). ``workflows.request_hash`` is the hash of
the request as the gateway's claim took it (``body_hash`` of its spec, or of
``{"definition": ref}``, with its input and tenant), which retries are compared with;
the projector keeps it, and clears it when the body accepted is not the claim's (a
submission straight on Kafka won the id); ``body_hash`` is the hash of the body accepted
(the request's until then). ``workflows.generation`` is the run's generation (1, then
one more per ``WorkflowRestarted``, ``restart_on_failure``) and ``restarted_seq`` the seq
of its latest restart (0: none), below which no ``tasks``, ``nodes`` or ``loop_steps``
row of it may stay. The ``workflows_by_*`` indexes serve
``GET /v1/workflows``: each filter (definition, status, name, tenant) with the listing's
order (``created_at desc, workflow_id desc``, also the cursor's), and ``workflows_list``
the ``created_after``/``created_before`` ranges; ``status`` is the only one of their
columns that changes after acceptance (a few times per run), so the projector's updates
of ``seq`` stay heap-only. ``schedules`` holds one row per schedule workflow (a spec
with a ``schedule`` node; ``name`` without the ``schedule:`` prefix): its settings, its
state (``paused``, the armed ``next_fire_at``, the last fire time, the last run started,
the fire times ``fired`` and ``skipped``) and ``status`` (``running`` until the workflow
ends, then its end); ``armed_seq``, ``fired_seq`` and ``paused_seq`` are the seq of the
last event applied to each part, so that a repeated event changes nothing."""

DEFINITIONS_SCHEMA = """
create table if not exists definitions (
    name text not null,
    version integer not null,
    spec jsonb not null,
    input_schema jsonb,
    digest text not null,
    state text not null,
    created_at timestamptz not null,
    primary key (name, version)
);
create table if not exists definition_heads (
    name text primary key,
    version integer not null,
    deleted boolean not null,
    state text not null,
    updated_at timestamptz not null
);
do $$ begin
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'definitions' and column_name = 'tenant')
    then
        alter table definitions add column tenant text;
    end if;
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'definition_heads'
                   and column_name = 'tenant')
    then
        alter table definition_heads add column tenant text;
    end if;
end $$;
"""
"""The definitions registry's tables, a projection of the ``definitions`` topic
(``services/gateway/definitions/registry.py``): one ``definitions`` row per version, one
``definition_heads`` row per name (its latest version, whether it is deleted). ``state``
is ``claimed`` from when the gateway chose the version until Kafka acknowledged its
records, then ``stored``. ``tenant`` is the tenant the definition belongs to (null:
shared by every tenant; added by ``alter table``, checked first as in ``SCHEMA``)."""


async def init_connection(conn: asyncpg.Connection) -> None:
    """jsonb in and out as Python values, through orjson (every connection to the
    projection is set up so, so that all of them store the same bytes)."""
    await conn.set_type_codec(
        "jsonb", schema="pg_catalog", format="text",
        encoder=lambda v: orjson.dumps(v).decode(), decoder=orjson.loads,
    )


def dsn_password(dsn: str) -> str | None:
    """The password a PostgreSQL URI carries (``user:password@`` or ``?password=``)."""
    parts = urllib.parse.urlsplit(dsn)
    query = urllib.parse.parse_qs(parts.query).get("password")
    return parts.password or (query[-1] if query else None)


def redact_dsn(dsn: str) -> str:
    """``dsn`` with its password, if any, replaced by ``***``: what may be logged."""
    parts = urllib.parse.urlsplit(dsn)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:***@{netloc.rpartition('@')[2]}"
    query = urllib.parse.urlencode(
        [(k, "***" if k == "password" else v)
         for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)], safe="*")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))


def connect_kwargs(dsn: str, auth: PgAuth | None = None) -> dict[str, Any]:
    """asyncpg's keyword arguments (``asyncpg.connect``, ``create_pool``) that add
    ``auth`` to ``dsn``: ``password`` unless the DSN has one (the DSN's wins),
    ``ssl`` (libpq's ``sslmode`` names, which asyncpg takes) when set.

    Args:
        dsn: a PostgreSQL URI.
        auth: the password and ``sslmode``; None: the environment's
            (``HEADWATER_PG_PASSWORD[_FILE]``, ``HEADWATER_PG_SSLMODE``).

    Raises:
        ValueError: ``auth`` is None and the environment's settings are bad.
    """
    auth = pg_auth_from_env() if auth is None else auth
    kwargs: dict[str, Any] = {}
    if auth.password and not dsn_password(dsn):
        kwargs["password"] = auth.password
    if auth.sslmode:
        kwargs["ssl"] = auth.sslmode
    return kwargs


async def connect(dsn: str, *, auth: PgAuth | None = None, **kwargs: Any) -> asyncpg.Connection:
    """``asyncpg.connect(dsn, **kwargs)`` with ``auth`` added (see ``connect_kwargs``).

    Raises:
        OSError or asyncpg.PostgresError: PostgreSQL is unreachable or refused.
    """
    return await asyncpg.connect(dsn, **connect_kwargs(dsn, auth), **kwargs)


async def connect_pool(dsn: str, timeout_s: float = 60.0, max_size: int = 10,
                       auth: PgAuth | None = None) -> asyncpg.Pool:
    """Open a pool and create the schema, retrying while PostgreSQL starts.

    Args:
        dsn: the projection's PostgreSQL URI.
        timeout_s: how long to keep trying while PostgreSQL is unreachable, seconds.
        max_size: the pool's most connections.
        auth: password and ``sslmode`` added to ``dsn`` (see ``connect_kwargs``);
            None: the environment's.

    Raises:
        OSError or asyncpg.PostgresError: still unreachable after ``timeout_s`` seconds
            (a refused password at once: it is not retried).
        ValueError: ``auth`` is None and the environment's settings are bad.
    """
    deadline = time.monotonic() + timeout_s
    extra = connect_kwargs(dsn, auth)
    while True:
        try:
            pool = await asyncpg.create_pool(dsn, min_size=1, max_size=max_size,
                                             init=init_connection, **extra)
            break
        except (OSError, asyncpg.CannotConnectNowError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    # Several services may create the schema at once; serialise with an advisory lock.
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("select pg_advisory_xact_lock(7420001)")
        await conn.execute(SCHEMA)
        await conn.execute(DEFINITIONS_SCHEMA)
    return pool


@contextlib.asynccontextmanager
async def name_locked(pool: asyncpg.Pool, lock_class: int,
                      name: str) -> AsyncIterator[asyncpg.Connection]:
    """One connection of ``pool`` holding the session advisory lock ``(lock_class,
    hashtext(name))`` (PostgreSQL's two-key ``pg_advisory_lock``) while the block runs:
    writers of one name take turns, across gateways.

    Args:
        pool: the projection's pool.
        lock_class: the lock's first key, one per kind of name (``7420002``
            definitions, ``7420003`` schedules; ``7420001`` is the schema's).
        name: the name whose writes are serialised.
    """
    async with pool.acquire() as conn:
        await conn.execute("select pg_advisory_lock($1, hashtext($2))", lock_class, name)
        try:
            yield conn
        finally:
            # A broken connection loses its session locks with it (and asyncpg's reset on
            # release unlocks every advisory lock anyway).
            if not conn.is_closed():
                await conn.execute("select pg_advisory_unlock($1, hashtext($2))",
                                   lock_class, name)
