"""Columns added to the PostgreSQL tables after their first version (``schema``): how the
tables of a running deployment grow in place, with no migration step to run.

Each addition is an ``alter table`` guarded by a look at ``information_schema`` for one
of its columns, so it runs once: an ``alter`` takes the table's strongest lock even when
it changes nothing, and every service runs the schema at start (``db.connect_pool``).
A new column is one more guarded ``if`` at the end of its store's block here
(``PROJECTION_COLUMNS`` or ``DEFINITIONS_COLUMNS``); the ``create table`` in ``schema``
may stay as it was, since the block runs after it and a table created today ends up as
one created before the column.
"""

from __future__ import annotations

PROJECTION_COLUMNS = """\
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
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'workflows' and column_name = 'rerun')
    then
        alter table workflows add column rerun jsonb;
    end if;
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'tasks' and column_name = 'traceback')
    then
        alter table tasks add column error_type text not null default '',
            add column traceback text not null default '', add column first_seq bigint;
    end if;
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'tasks' and column_name = 'cached')
    then
        alter table tasks add column cached jsonb;
    end if;
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'workflows'
                   and column_name = 'deadline_at')
    then
        alter table workflows add column deadline_at timestamptz;
    end if;
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'workflows' and column_name = 'paused')
    then
        alter table workflows add column paused jsonb,
            add column paused_seq bigint not null default 0;
    end if;
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'workflows' and column_name = 'labels')
    then
        alter table workflows add column labels jsonb;
    end if;
end $$;
"""
"""The columns added to the projection's tables (``schema.SCHEMA`` runs them after the
tables, before the indexes that use them). ``workflows.parent_*`` link a child to its
parent (a ``workflow`` node's child, or a run a task's ``ctx.call`` submitted),
``workflows.deadline_at`` is the run's deadline (its ``DeadlineSet``; null: none),
``nodes.condition`` and ``nodes.wake_at`` hold a ``when`` outcome and a sleep's wake-up.
``workflows.definition`` and ``definition_version`` name the registered definition a run
was resolved from (null for an inline spec). ``workflows.request_hash`` is the hash of
the request as the gateway's claim took it (``body_hash`` of its spec, or of
``{"definition": ref}``, with its input and tenant), which retries are compared with; the
projector keeps it, and clears it when the body accepted is not the claim's (a submission
straight on Kafka won the id); ``body_hash`` is the hash of the body accepted (the
request's until then). ``workflows.generation`` is the run's generation (1, then one more
per ``WorkflowRestarted``, ``restart_on_failure``) and ``restarted_seq`` the seq of its
latest restart (0: none), below which no ``tasks``, ``nodes`` or ``loop_steps`` row of it
may stay. ``tasks.error_type`` and ``traceback`` are the latest attempt's failure (its
``TaskFailed``; "" until one, and again at the next dispatch); ``first_seq`` is the seq
of the task's first dispatch, from which its attempts' events are read (``GET
/v1/workflows/{id}/tasks/{node}/{index}``; null for a row projected before the column).
``workflows.rerun`` is a rerun's source and what it reuses (its ``WorkflowAccepted``'s
``rerun``; null: not a rerun), ``workflows.paused`` and ``paused_seq`` a run's pause
(``{since, by, reason}`` or null) and the seq that last set it (``projector.pauses``),
and ``workflows.labels`` its labels (``schema.SCHEMA`` says how they are searched)."""

DEFINITIONS_COLUMNS = """\
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
    if not exists (select 1 from information_schema.columns where table_schema =
                   current_schema() and table_name = 'definition_heads'
                   and column_name = 'revision')
    then
        alter table definition_heads add column revision bigint not null default 0;
    end if;
end $$;
"""
"""The columns added to the definitions registry's tables (``schema.DEFINITIONS_SCHEMA``):
``tenant`` on ``definitions`` and ``definition_heads``, and a head's ``revision``."""
