"""Columns added to the PostgreSQL tables after their first version (``schema``): how the
tables of a running deployment grow in place, with no migration step to run.

Each addition is an ``alter table`` guarded by a look at ``information_schema`` for one
of its columns, so it runs once: an ``alter`` takes the table's strongest lock even when
it changes nothing, and every service runs the schema at start (``db.connect_pool``).
A new column is one more ``Added`` at the end of its store's list here
(``PROJECTION_COLUMNS`` or ``DEFINITIONS_COLUMNS``), which ``guarded`` writes as its
guarded ``if``; the ``create table`` in ``schema``
may stay as it was, since the block runs after it and a table created today ends up as
one created before the column.
"""

from __future__ import annotations

from typing import NamedTuple


class Added(NamedTuple):
    """Columns added to ``table`` by one ``alter table table <sql>`` (then ``after``, a
    statement that fills them, if any), run while ``table`` has no column ``probe``."""

    table: str
    probe: str
    sql: str
    after: str = ""


def guarded(*added: Added) -> str:
    """One ``do`` block running each addition once: its ``alter`` (and ``after``) only
    while its probe column is missing (``information_schema``), in order."""
    steps = [
        f"    if not exists (select 1 from information_schema.columns where table_schema =\n"
        f"                   current_schema() and table_name = '{a.table}'\n"
        f"                   and column_name = '{a.probe}')\n"
        f"    then\n        alter table {a.table} {a.sql};\n"
        + (f"        {a.after};\n" if a.after else "") + "    end if;\n"
        for a in added]
    return "do $$ begin\n" + "".join(steps) + "end $$;\n"

PROJECTION_COLUMNS = guarded(
    Added("workflows", "parent_id", "add column parent_id text, add column parent_node"
          " text, add column parent_index integer, add column parent_attempt integer"),
    Added("nodes", "condition", "add column condition boolean, add column wake_at"
          " timestamptz"),
    Added("workflows", "definition", "add column definition text, add column"
          " definition_version integer"),
    # A claim not accepted yet holds its request's hash in body_hash.
    Added("workflows", "request_hash", "add column request_hash text",
          "update workflows set request_hash = body_hash where seq = 0"),
    Added("workflows", "generation", "add column generation integer not null default 1,"
          " add column restarted_seq bigint not null default 0"),
    Added("workflows", "rerun", "add column rerun jsonb"),
    Added("tasks", "traceback", "add column error_type text not null default '', add"
          " column traceback text not null default '', add column first_seq bigint"),
    Added("tasks", "cached", "add column cached jsonb"),
    Added("workflows", "deadline_at", "add column deadline_at timestamptz"),
    Added("workflows", "paused", "add column paused jsonb, add column paused_seq bigint"
          " not null default 0"),
    Added("workflows", "labels", "add column labels jsonb"),
)
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

DEFINITIONS_COLUMNS = guarded(
    Added("definitions", "tenant", "add column tenant text"),
    Added("definition_heads", "tenant", "add column tenant text"),
    Added("definition_heads", "revision", "add column revision bigint not null default 0"),
)
"""The columns added to the definitions registry's tables (``schema.DEFINITIONS_SCHEMA``):
``tenant`` on ``definitions`` and ``definition_heads``, and a head's ``revision``."""
