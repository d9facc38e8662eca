"""What a cache's history writes to the projection: its ``caches`` row (the task and key
it keeps, when its latest event came), so that the caches can be listed apart from the
runs (docs/architecture.md §4o). Its hits, misses and stores are counted by the
coordinator's metrics and read in its history; the row keeps no counts, so that every
statement is an idempotent write guarded by ``seq``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from headwater.core import events as ev

Statements = list[tuple[str, tuple[Any, ...]]]

UPSERT_CACHE = (
    "insert into caches (workflow_id, task, key, updated_at, seq)"
    " values ($1, $2, $3, $4, $5) on conflict (workflow_id) do update set"
    " updated_at = excluded.updated_at, seq = excluded.seq where caches.seq < excluded.seq")
TOUCH_CACHE = (
    "update caches set updated_at = $2, seq = $3 where workflow_id = $1 and seq < $3")
CACHE_STATEMENTS = (UPSERT_CACHE, TOUCH_CACHE)
"""In the order a batch applies them: a cache's row is written by its first lookup
before anything updates it."""

CACHE_STEPS: dict[type, Callable[[str, int, datetime, Any], Statements]] = {
    ev.CacheLookedUp: lambda wid, seq, at, b: [(UPSERT_CACHE, (wid, b.task, b.key, at, seq))],
    ev.CacheServed: lambda wid, seq, at, b: [(TOUCH_CACHE, (wid, at, seq))],
    ev.CacheReleased: lambda wid, seq, at, b: [(TOUCH_CACHE, (wid, at, seq))],
}
"""Body type -> its statements."""
