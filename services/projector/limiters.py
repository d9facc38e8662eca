"""What a limiter's history writes to the projection: its ``limiters`` row (the kind and
key of its limit, the limit, what it holds and queues after its latest event, the
permits it granted), which ``GET /v1/limits`` reads (docs/architecture.md §4n).

Every event of a limiter carries what it holds, queues and has granted once applied,
and every statement is guarded by ``seq``: the row is the latest event's, whatever the
batches and the order of the statements in one (a request's upsert runs before the
updates), and duplicates change nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from headwater.core import events as ev

Statements = list[tuple[str, tuple[Any, ...]]]

UPSERT_LIMITER = (
    "insert into limiters (workflow_id, kind, key, lim, window_ms, holding, queued,"
    " granted, updated_at, seq) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    " on conflict (workflow_id) do update set lim = excluded.lim,"
    " window_ms = excluded.window_ms, holding = excluded.holding,"
    " queued = excluded.queued, granted = excluded.granted,"
    " updated_at = excluded.updated_at, seq = excluded.seq"
    " where limiters.seq < excluded.seq")
SET_LIMITER = (
    "update limiters set holding = $2, queued = $3, granted = $4, updated_at = $5,"
    " seq = $6 where workflow_id = $1 and seq < $6")
LIMITER_STATEMENTS = (UPSERT_LIMITER, SET_LIMITER)
"""In the order a batch applies them: a limiter's row is written by its first request
before anything updates it."""

LIMITER_STEPS: dict[type, Callable[[str, int, datetime, Any], Statements]] = {
    ev.PermitRequested: lambda wid, seq, at, b: [
        (UPSERT_LIMITER, (wid, b.kind, b.key, b.limit, b.window_ms, b.holding, b.queued,
                          b.granted, at, seq))],
    ev.LimitDefined: lambda wid, seq, at, b: [
        (UPSERT_LIMITER, (wid, b.kind, b.key, b.limit, b.window_ms, b.holding, b.queued,
                          b.granted, at, seq)) if b.limit else
        (SET_LIMITER, (wid, b.holding, b.queued, b.granted, at, seq))],
    ev.PermitReleased: lambda wid, seq, at, b: [
        (SET_LIMITER, (wid, b.holding, b.queued, b.granted, at, seq))],
    ev.PermitIssued: lambda wid, seq, at, b: [
        (SET_LIMITER, (wid, b.holding, b.queued, b.granted, at, seq))],
    ev.PermitRefused: lambda wid, seq, at, b: [
        (SET_LIMITER, (wid, b.holding, b.queued, b.granted, at, seq))],
}
"""Body type -> its statements."""
