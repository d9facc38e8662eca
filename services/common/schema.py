"""The PostgreSQL projection's tables, created by every service's pool
(``db.connect_pool``, idempotent: ``create ... if not exists`` and guarded ``alter``, ``columns``).
The projection can be dropped and rebuilt from the events topic at any time
(docs/architecture.md §1)."""

from __future__ import annotations

from services.common.columns import DEFINITIONS_COLUMNS, PROJECTION_COLUMNS

_RUN_TABLES = """
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
    cached jsonb,
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
create table if not exists signal_receipts (
    workflow_id text not null,
    signal_id text not null,
    name text not null,
    idx integer,
    received_at timestamptz,
    refused_reason text,
    refused_at timestamptz,
    primary key (workflow_id, signal_id)
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
"""
_INDEXES_AND_TABLES = """\
create index if not exists workflows_by_labels on workflows using gin (labels)
    where labels is not null;
create index if not exists workflows_reruns on workflows ((rerun->>'of'), created_at)
    where rerun is not null;
create index if not exists tasks_by_node on tasks (workflow_id, node, idx nulls first);
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
create index if not exists workflows_paused on workflows (created_at desc, workflow_id desc)
    where paused is not null;
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
create table if not exists limiters (
    workflow_id text primary key,
    kind text not null,
    key text not null,
    lim integer not null,
    window_ms bigint not null default 0,
    holding integer not null default 0,
    queued integer not null default 0,
    granted bigint not null default 0,
    updated_at timestamptz not null,
    seq bigint not null
);
create table if not exists caches (
    workflow_id text primary key,
    task text not null,
    key text not null,
    updated_at timestamptz not null,
    seq bigint not null
);
create table if not exists task_logs (
    workflow_id text not null,
    node text not null,
    idx integer not null,
    attempt integer not null,
    line integer not null,
    at timestamptz not null,
    level text not null,
    stream text not null,
    logger text not null,
    message text not null,
    primary key (workflow_id, node, idx, attempt, line)
);
create table if not exists task_log_ends (
    workflow_id text not null,
    node text not null,
    idx integer not null,
    attempt integer not null,
    lines integer not null,
    primary key (workflow_id, node, idx, attempt)
);
create table if not exists retired_ids (
    workflow_id text primary key,
    tenant text,
    status text not null,
    request_hash text,
    body_hash text,
    retired_at timestamptz not null default now()
);
"""
SCHEMA = _RUN_TABLES + PROJECTION_COLUMNS + _INDEXES_AND_TABLES
"""The projection's tables, created if missing; the columns added after a table's first
version are ``columns.PROJECTION_COLUMNS``, between the tables and their indexes.
Tables of the node kinds: ``waits`` (one row per wait, ``node`` or ``node[index]``),
``signals`` (one per recorded ``SignalSent`` or ``SignalDiscarded``, by ``seq``) and
``loop_steps`` (one per decided step); ``signal_receipts`` holds what of a signal
the history does not: when the gateway accepted it (``received_at``, its 202) and why
the coordinator refused it (``refused_reason``, ``refused_at``: its dead letter, read
from ``dlq`` by ``projector.refusals``), so no event fills it and a rebuild keeps it;
``tasks_by_node`` serves a node's tasks in index order (the run
document's, and ``GET .../nodes/{node}/tasks`` a page at a time). The
``workflows_by_*`` indexes serve
``GET /v1/workflows``: each filter (definition, status, name, tenant) with the listing's
order (``created_at desc, workflow_id desc``, also the cursor's), and ``workflows_list``
the ``created_after``/``created_before`` ranges; ``workflows.labels`` holds a run's
labels (``headwater.core.labels``, from its spec; null: none) and ``workflows_by_labels``
(GIN, the default ``jsonb_ops``) serves ``?label=key:value`` (``@>``) and ``?label=key``
(``?``), and ``workflows_paused`` (partial: the rows with a pause) ``?paused=true``
(``paused`` changes only at a pause or a resume); ``status`` is the only other one of their
columns that changes after acceptance (a few times per run), so the projector's updates
of ``seq`` stay heap-only. ``schedules`` holds one row per schedule workflow (a spec
with a ``schedule`` node; ``name`` without the ``schedule:`` prefix): its settings, its
state (``paused``, the armed ``next_fire_at``, the last fire time, the last run started,
the fire times ``fired`` and ``skipped``) and ``status`` (``running`` until the workflow
ends, then its end); ``armed_seq``, ``fired_seq`` and ``paused_seq`` are the seq of the
last event applied to each part, so that a repeated event changes nothing.
``task_logs`` holds the lines task attempts logged and printed (the ``logs`` topic,
``services/projector/task_logs.py``), one row per line, numbered from 1 per attempt;
``idx`` is the map item or loop step, -1 for a node without index (a key column cannot
be null); ``task_log_ends`` has a row per attempt whose worker sent its log whole
(``lines`` lines), which readers take as the end of that attempt's lines.
``retired_ids`` keeps, for each run whose rows projection retention deleted, what a
submission of its id is compared with (its tenant, final status and hashes): the id
stays taken, as the coordinator's marker keeps it (a retry of the same request is the
same run, 200; another body 409). A projection rebuild leaves it as it is."""

_DEFINITION_TABLES = """
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
"""
_DEFINITION_PAUSES = """\
create table if not exists definition_pauses (
    name text primary key,
    paused_at timestamptz not null,
    paused_by text not null default '',
    reason text not null default ''
);
"""
DEFINITIONS_SCHEMA = _DEFINITION_TABLES + DEFINITIONS_COLUMNS + _DEFINITION_PAUSES
"""The definitions registry's tables, a projection of the ``definitions`` topic
(``services/gateway/definitions/registry.py``): one ``definitions`` row per version, one
``definition_heads`` row per name (its current version, whether it is deleted, and its
``revision``: how many times it changed, so a rollback's head replaces the one before
it). ``definition_pauses`` holds the paused definitions (``services/gateway/pauses/``):
the gateway writes it, no record fills it, and a rebuild keeps it. ``state``
is ``claimed`` from when the gateway chose the version until Kafka acknowledged its
records, then ``stored``. ``tenant`` is the tenant the definition belongs to (null:
shared by every tenant). ``tenant`` and ``revision`` came later
(``columns.DEFINITIONS_COLUMNS``)."""

WEBHOOKS_SCHEMA = """
create table if not exists webhooks (
    name text primary key,
    tenant text,
    url text not null,
    events text[] not null,
    filter jsonb not null,
    secret text not null,
    max_attempts integer not null,
    backoff_ms bigint not null,
    backoff_max_ms bigint not null,
    deleted boolean not null,
    created_at_ms bigint not null,
    at_ms bigint not null
);
create table if not exists webhook_deliveries (
    delivery_id text primary key,
    webhook text not null,
    tenant text,
    workflow_id text not null,
    seq bigint not null,
    event text not null,
    body bytea not null,
    status text not null default 'pending',
    attempts jsonb not null default '[]',
    next_at timestamptz,
    lease_until timestamptz,
    reason text not null default '',
    created_at timestamptz not null,
    updated_at timestamptz not null
);
create index if not exists webhook_deliveries_due on webhook_deliveries (next_at)
    where status = 'pending';
create index if not exists webhook_deliveries_by_hook on webhook_deliveries (webhook,
    created_at desc, delivery_id desc);
"""
"""The webhooks' tables. ``webhooks`` is a projection of the ``webhooks`` topic (one
row per name, its last record; the gateway writes it after Kafka acknowledged the
record, and the deliverer reads the whole topic into it at start, so a lost table comes
back). ``webhook_deliveries`` is the deliverer's own durable state: one row per
delivery decided from ``events`` (``delivery_id``, derived, so a decision made again is
the same row), written before its first attempt; ``status`` is ``pending``,
``delivered`` or ``dead`` (``reason``: why, after the last attempt); ``attempts`` lists
each attempt (``n``, ``at``, ``status_code``, ``error``, ``ms``); ``next_at`` is when the
next one is due and ``lease_until`` how long a deliverer holds it for its attempt in
flight. ``body`` is the JSON posted, byte for byte on every attempt."""
