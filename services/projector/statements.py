"""What each history event writes to the PostgreSQL projection: the statements of the
workflows, nodes, tasks and events tables, and ``core_plan``, which picks them for one
event (the node kinds' own statements are in ``kinds.py``; ``writer.py`` applies both).

Every statement is guarded by ``seq`` (or sets a value that never changes), so applying
a history in one batch, in many, or with duplicates gives the same rows.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from headwater.blobs import REF_KEY, refs_in
from headwater.core import events as ev
from headwater.core.idempotency import body_hash
from headwater.core.ids import task_key
from headwater.core.labels import labels_of
from headwater.core.status import NodeStatus, TaskStatus, WorkflowStatus

OPEN_TASKS = [s.value for s in TaskStatus if not s.terminal]
OPEN_NODES = [s.value for s in NodeStatus if not s.terminal]
TERMINAL = {
    ev.WorkflowSucceeded: WorkflowStatus.SUCCEEDED,
    ev.WorkflowFailed: WorkflowStatus.FAILED,
    ev.WorkflowCancelled: WorkflowStatus.CANCELLED,
}
"""The terminal body types -> the workflow status they set."""


def ts(at_ms: int) -> datetime:
    """Milliseconds since the epoch as an aware UTC datetime."""
    return datetime.fromtimestamp(at_ms / 1000, tz=UTC)


INSERT_BLOB_REFS = (
    "insert into blob_refs (workflow_id, digest) select $1, d from unnest($2::text[]) d"
    " on conflict do nothing")
"""The blobs an event refers to (``headwater/blobs.py``) are its run's: so a run whose
rows hold a reference keeps the blob while they stay, whoever stored it (a child's
output in its parent's task, a rerun's reused output, a reference passed on), and loses
it with them (projection retention's ``RUN_TABLES``)."""
BLOB_MARK = b'"$blob"'
INSERT_EVENT = (
    "insert into events (workflow_id, seq, type, at, data) values ($1, $2, $3, $4, $5)"
    " on conflict do nothing")
# created_at: the acceptance's time (the coordinator's clock, as the log has it), not the
# gateway's claim's, so that a projection rebuilt from the log equals the live one.
# body_hash: of the body that runs (the gateway's claim may have hashed another one that
# lost a race with a submission straight on Kafka), from the decoded record, so that the
# same body resubmitted over HTTP matches whatever PostgreSQL does to its numbers.
# definition, definition_version: the registered definition the spec was resolved from
# (null for an inline spec), as the acceptance recorded it.
# request_hash: the gateway's (the hash of the request its claim took, which retries are
# compared with), kept while the body accepted is the claim's, cleared when another one
# won the id (then retries compare with body_hash). SET reads the row as it was.
UPSERT_ACCEPTED = (
    "insert into workflows (workflow_id, name, tenant, status, seq, spec, input,"
    " body_hash, created_at, updated_at, definition, definition_version, rerun, labels)"
    " values ($1, $2, $3, 'running', $4, $5, $6, $8, $7, $7, $9, $10, $11, $12)"
    " on conflict (workflow_id) do update set name = excluded.name, body_hash = excluded.body_hash,"
    " tenant = coalesce(excluded.tenant, workflows.tenant), spec = excluded.spec,"
    " input = excluded.input, created_at = excluded.created_at,"
    " definition = excluded.definition, definition_version = excluded.definition_version,"
    " rerun = excluded.rerun, labels = excluded.labels,"
    " request_hash = case when workflows.spec = excluded.spec"
    " and workflows.input is not distinct from excluded.input"
    " and workflows.tenant is not distinct from excluded.tenant"
    " then workflows.request_hash end,"
    " status = case when workflows.seq < excluded.seq then 'running' else workflows.status end,"
    " seq = greatest(workflows.seq, excluded.seq),"
    " updated_at = greatest(workflows.updated_at, excluded.updated_at)")
BUMP_WORKFLOW = (
    "update workflows set seq = $2, updated_at = $3 where workflow_id = $1 and seq < $2")
# A row is made by the task's first dispatch, or by a failure that came without one (a
# map item whose input could not be resolved; or, applied out of order, a failure before
# its dispatch). So a dispatch always sets what is the task's whatever its attempt (task,
# queue, first_seq: the first dispatch's seq, least() of those seen) and its attempt's
# dispatched_at; the rest only when it is newer than the row (a new attempt).
_NEWER = "tasks.seq < excluded.seq"
UPSERT_DISPATCHED = (
    "insert into tasks (workflow_id, task_key, node, idx, attempt, status, task, queue,"
    " dispatched_at, seq, first_seq) values ($1, $2, $3, $4, $5, 'dispatched', $6, $7, $8,"
    " $9, $9) on conflict (workflow_id, task_key) do update set task = excluded.task,"
    " queue = excluded.queue, first_seq = least(tasks.first_seq, excluded.first_seq),"
    f" dispatched_at = case when {_NEWER} or tasks.attempt = excluded.attempt"
    " then excluded.dispatched_at else tasks.dispatched_at end,"
    + ",".join(f" {column} = case when {_NEWER} then {value} else tasks.{column} end"
               for column, value in (
                   ("attempt", "excluded.attempt"), ("status", "excluded.status"),
                   ("error", "''"), ("error_type", "''"), ("traceback", "''"),
                   ("progress", "null"), ("message", "''"), ("worker", "''"),
                   ("started_at", "null"), ("finished_at", "null")))
    + ", seq = greatest(tasks.seq, excluded.seq)")
UPSERT_HELD = (
    "insert into tasks (workflow_id, task_key, node, idx, attempt, status, message, seq,"
    " first_seq) values ($1, $2, $3, $4, $5, 'held', $6, $7, $7) on conflict"
    " (workflow_id, task_key) do update set"
    " first_seq = least(tasks.first_seq, excluded.first_seq),"
    + ",".join(f" {column} = case when {_NEWER} then {value} else tasks.{column} end"
               for column, value in (
                   ("attempt", "excluded.attempt"), ("status", "excluded.status"),
                   ("message", "excluded.message"), ("error", "''"), ("error_type", "''"),
                   ("traceback", "''"), ("progress", "null"), ("worker", "''"),
                   ("started_at", "null"), ("finished_at", "null")))
    + ", seq = greatest(tasks.seq, excluded.seq)")
"""A held attempt's row (``TaskHeld``): ``held``, its ``message`` saying which limit it
waits for; its dispatch makes it ``dispatched``."""
UPSERT_NODE = (
    "insert into nodes (workflow_id, node, status, total, error, seq)"
    " values ($1, $2, $3, $4, $5, $6) on conflict (workflow_id, node) do update set"
    " status = case when nodes.seq < excluded.seq then excluded.status else nodes.status end,"
    " error = case when nodes.seq < excluded.seq then excluded.error else nodes.error end,"
    # A map's size changes only with a restart (a new generation lists anew): the
    # later event's, so one batch and many give the same total.
    " total = case when nodes.seq < excluded.seq then coalesce(excluded.total, nodes.total)"
    " else coalesce(nodes.total, excluded.total) end,"
    " seq = greatest(nodes.seq, excluded.seq)")
_TASK = " where workflow_id = $1 and task_key = $2 and seq < $3"
# Its attempt's worker and start even when a later event of the attempt (its failure,
# applied out of order) made the row first; the status only when it is newer.
TASK_STARTED = (
    "update tasks set status = case when seq < $3 then 'running' else status end,"
    " worker = $4, started_at = $5, seq = greatest(seq, $3) where workflow_id = $1"
    " and task_key = $2 and (seq < $3 or (attempt = $6 and started_at is null))")
TASK_PROGRESSED = "update tasks set progress = $4, message = $5, seq = $3" + _TASK
# An upsert: a map item whose input could not be resolved fails without a dispatch,
# and its row is the one that counts it among the node's failed tasks.
TASK_FAILED = (
    "insert into tasks (workflow_id, task_key, node, idx, attempt, status, error, finished_at,"
    " error_type, traceback, seq, first_seq) values ($1, $2, $8, $9, $10, 'failed', $4, $5,"
    " $6, $7, $3, $3) on conflict (workflow_id, task_key) do update set status = 'failed',"
    " error = excluded.error, finished_at = excluded.finished_at,"
    " error_type = excluded.error_type, traceback = excluded.traceback, seq = excluded.seq"
    " where tasks.seq < excluded.seq")
TASK_RETRY_WAIT = "update tasks set status = 'retry_wait', attempt = $4, seq = $3" + _TASK
TASK_SUCCEEDED = ("update tasks set status = 'succeeded', progress = 1.0, finished_at = $4,"
                  " seq = $3" + _TASK)
TASK_CACHED = (  # an attempt a cache's hit succeeded: never dispatched (§4o)
    "update tasks set status = 'succeeded', progress = 1.0, message = 'cached', task = $4,"
    " finished_at = $5, cached = $6, seq = $3" + _TASK)
UPSERT_REUSED = (  # a rerun's item taken from its source: succeeded, never dispatched
    "insert into tasks (workflow_id, task_key, node, idx, attempt, status, progress,"
    " message, dispatched_at, finished_at, seq) values ($1, $2, $3, $4, $5, 'succeeded', 1.0,"
    " 'reused', $6, $6, $7) on conflict (workflow_id, task_key) do update set"
    " attempt = excluded.attempt, status = excluded.status, progress = 1.0,"
    " message = excluded.message, dispatched_at = excluded.dispatched_at,"
    " finished_at = excluded.finished_at, seq = excluded.seq where tasks.seq < excluded.seq")
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
CORE_STATEMENTS = (INSERT_EVENT, INSERT_BLOB_REFS, UPSERT_ACCEPTED, BUMP_WORKFLOW, UPSERT_HELD,
                   UPSERT_DISPATCHED, UPSERT_NODE, TASK_STARTED, TASK_PROGRESSED, TASK_FAILED,
                   TASK_RETRY_WAIT, TASK_SUCCEEDED, TASK_CACHED, UPSERT_REUSED, TASK_CANCELLED,
                   UPSERT_TERMINAL,
                   CANCEL_OPEN_TASKS, CANCEL_OPEN_NODES)
"""The core statements, in the order a batch applies them (a task's lifecycle order)."""


Statements = list[tuple[str, tuple[Any, ...]]]
"""Statements with their arguments, in order."""
NODE_AND_TASK_STEPS: dict[type, Callable[[str, int, datetime, Any], Statements]] = {
    ev.TaskDispatched: lambda wid, seq, at, b: [
        (UPSERT_DISPATCHED, (wid, task_key(b.node, b.index), b.node, b.index, b.attempt,
                             b.task, b.queue, at, seq)),
        (UPSERT_NODE, (wid, b.node, NodeStatus.RUNNING.value, None, "", seq))],
    ev.TaskHeld: lambda wid, seq, at, b: [
        (UPSERT_HELD, (wid, task_key(b.node, b.index), b.node, b.index, b.attempt,
                       held_message(b), seq)),
        (UPSERT_NODE, (wid, b.node, NodeStatus.RUNNING.value, None, "", seq))],
    ev.DispatchDeferred: lambda wid, seq, at, b: [  # held while its run is paused
        (UPSERT_HELD, (wid, task_key(b.node, b.index), b.node, b.index, b.attempt,
                       "held: the run is paused", seq)),
        (UPSERT_NODE, (wid, b.node, NodeStatus.RUNNING.value, None, "", seq))],
    ev.DispatchRecalled: lambda wid, seq, at, b: [  # held under its next attempt
        (UPSERT_HELD, (wid, task_key(b.node, b.index), b.node, b.index, b.attempt + 1,
                       f"held: the run is paused (attempt {b.attempt} recalled)", seq))],
    ev.MapExpanded: lambda wid, seq, at, b: [
        (UPSERT_NODE, (wid, b.node, NodeStatus.RUNNING.value, b.count, "", seq))],
    ev.NodeFinished: lambda wid, seq, at, b: [
        (UPSERT_NODE, (wid, b.node, b.status, None, b.error, seq))],
    ev.TaskStarted: lambda wid, seq, at, b: [
        (TASK_STARTED, (wid, task_key(b.node, b.index), seq, b.worker, at, b.attempt))],
    ev.TaskProgressed: lambda wid, seq, at, b: [
        (TASK_PROGRESSED, (wid, task_key(b.node, b.index), seq, b.fraction, b.message))],
    ev.TaskFailed: lambda wid, seq, at, b: [
        (TASK_FAILED, (wid, task_key(b.node, b.index), seq, b.error, at, b.error_type,
                       b.traceback, b.node, b.index, b.attempt))],
    ev.TimerScheduled: lambda wid, seq, at, b: [
        (TASK_RETRY_WAIT, (wid, task_key(b.node, b.index), seq, b.attempt))],
    ev.TaskSucceeded: lambda wid, seq, at, b: [
        (TASK_SUCCEEDED, (wid, task_key(b.node, b.index), seq, at))],
    ev.TaskLookedUp: lambda wid, seq, at, b: [
        (UPSERT_HELD, (wid, task_key(b.node, b.index), b.node, b.index, b.attempt,
                       f"looking up the cache of {b.task} ({b.cache})", seq)),
        (UPSERT_NODE, (wid, b.node, NodeStatus.RUNNING.value, None, "", seq))],
    ev.TaskCached: lambda wid, seq, at, b: [
        (TASK_CACHED, (wid, task_key(b.node, b.index), seq, b.task, at, cached_view(b)))],
    ev.TaskReused: lambda wid, seq, at, b: [
        (UPSERT_REUSED, (wid, task_key(b.node, b.index), b.node, b.index, b.attempt, at, seq))],
    ev.TaskCancelled: lambda wid, seq, at, b: [
        (TASK_CANCELLED, (wid, task_key(b.node, b.index), seq, b.reason, at))],
}
"""Body type -> the node and task statements of an event of a running workflow (after
its ``BUMP_WORKFLOW``). Heartbeats, checkpoints, streamed chunks and discarded reports
have none: they live in the event log (and on SSE) only."""


def core_plan(e: ev.HistoryEvent) -> Statements:
    """The core statements that project one event, with their arguments."""
    b, wid, seq, at = e.body, e.workflow_id, e.seq, ts(e.body.at_ms)
    data = orjson.dumps(b)  # what the jsonb codec writes (db.init_connection), once
    steps: Statements = [(INSERT_EVENT, (wid, seq, e.type, at, orjson.Fragment(data)))]
    if BLOB_MARK in data:
        digests = sorted({r[REF_KEY] for r in refs_in(orjson.loads(data))})
        if digests:
            steps.append((INSERT_BLOB_REFS, (wid, digests)))
    if isinstance(b, ev.WorkflowAccepted):
        name = b.spec.get("name", "") if isinstance(b.spec, dict) else ""
        steps.append((UPSERT_ACCEPTED, (wid, str(name), b.tenant, seq, b.spec, b.input, at,
                                        body_hash(b.spec, b.input, b.tenant), b.definition,
                                        b.definition_version, b.rerun,
                                        labels_of(b.spec) or None)))
        return steps
    if type(b) in TERMINAL:
        return [*steps, *_terminal_steps(wid, seq, at, b)]
    steps.append((BUMP_WORKFLOW, (wid, seq, at)))
    node_and_task = NODE_AND_TASK_STEPS.get(type(b))
    if node_and_task is not None:
        steps += node_and_task(wid, seq, at, b)
    return steps


def _terminal_steps(wid: str, seq: int, at: datetime, b: Any) -> Statements:
    """A workflow's end: its row's status, output or error, and every node and task
    still open cancelled."""
    output = b.output if isinstance(b, ev.WorkflowSucceeded) else None
    error = b.error if isinstance(b, ev.WorkflowFailed) else (
        b.reason if isinstance(b, ev.WorkflowCancelled) else "")
    return [(UPSERT_TERMINAL, (wid, TERMINAL[type(b)].value, seq, output, error, at)),
            (CANCEL_OPEN_TASKS, (wid, seq, OPEN_TASKS)),
            (CANCEL_OPEN_NODES, (wid, seq, OPEN_NODES))]


def held_message(b: ev.TaskHeld) -> str:
    """What a held attempt's row says it waits for: ``waiting for concurrency acme
    (limit 2)``, ``waiting for rate openai (500 per 60 s)``."""
    if b.kind == "rate":
        return f"waiting for rate {b.key} ({b.limit} per {b.window_ms / 1000:g} s)"
    return f"waiting for {b.kind} {b.key} (limit {b.limit})"


def cached_view(b: ev.TaskCached) -> dict[str, Any]:
    """What a task's row keeps of a cache's hit (its ``cached`` column, the run
    document's ``tasks[].cached``): the source attempt and what computing it cost."""
    source = b.source if isinstance(b.source, dict) else {}
    return {"run": source.get("workflow_id"), "node": source.get("node"),
            "index": source.get("index"), "attempt": source.get("attempt"),
            "cache": b.cache, "saved_ms": b.saved_ms, "units": b.units}
