"""The webhooks' PostgreSQL tables (``services/common/schema.py``, ``WEBHOOKS_SCHEMA``):
the statements that write them and the reads of the deliverer and the gateway.

``webhooks`` holds each name's last ``WebhookStored`` record: ``UPSERT_HOOK`` replaces
a row only with a record written at the same time or later (``at_ms``), so the gateway
(after Kafka acknowledged its record) and the deliverer (reading the topic) may write
the same record in any order. ``webhook_deliveries`` is written by the deliverer:
``INSERT_DELIVERY`` once per delivery id (a decision made again changes nothing),
``lease_due`` takes the attempts that are due, ``record_attempt`` keeps each outcome.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import asyncpg

from headwater.webhooks import WebhookStored
from services.webhooks.backoff import Next
from services.webhooks.matching import Decided

UPSERT_HOOK = (
    "insert into webhooks (name, tenant, url, events, filter, secret, max_attempts,"
    " backoff_ms, backoff_max_ms, deleted, created_at_ms, at_ms)"
    " values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
    " on conflict (name) do update set tenant = excluded.tenant, url = excluded.url,"
    " events = excluded.events, filter = excluded.filter, secret = excluded.secret,"
    " max_attempts = excluded.max_attempts, backoff_ms = excluded.backoff_ms,"
    " backoff_max_ms = excluded.backoff_max_ms, deleted = excluded.deleted,"
    " created_at_ms = excluded.created_at_ms, at_ms = excluded.at_ms"
    " where webhooks.at_ms <= excluded.at_ms")
HOOK_COLUMNS = ("name, tenant, url, events, filter, secret, max_attempts, backoff_ms,"
                " backoff_max_ms, deleted, created_at_ms, at_ms")
INSERT_DELIVERY = (
    "insert into webhook_deliveries (delivery_id, webhook, tenant, workflow_id, seq, event,"
    " body, next_at, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $8, $8)"
    " on conflict (delivery_id) do nothing")
LEASE_DUE = (
    "update webhook_deliveries d set lease_until = $2 from ("
    " select delivery_id from webhook_deliveries where status = 'pending' and next_at <= $1"
    " and (lease_until is null or lease_until < $1) order by next_at limit $3"
    " for update skip locked) due where d.delivery_id = due.delivery_id"
    " returning d.delivery_id, d.webhook, d.event, d.body, d.attempts")
REDELIVER = (
    "update webhook_deliveries set status = 'pending', next_at = $3, reason = '',"
    " lease_until = null, updated_at = $3 where delivery_id = $1 and webhook = $2"
    " and status <> 'pending' returning delivery_id")
RECORD_ATTEMPT = (
    "update webhook_deliveries set attempts = attempts || $2, status = $3,"
    " next_at = $4, reason = $5, lease_until = null, updated_at = $6"
    " where delivery_id = $1 and status = 'pending'")


def hook_args(hook: WebhookStored) -> tuple[Any, ...]:
    """``UPSERT_HOOK``'s arguments for a record."""
    return (hook.name, hook.tenant, hook.url, list(hook.events), hook.filter,
            hook.secret, hook.max_attempts, hook.backoff_ms, hook.backoff_max_ms, hook.deleted,
            hook.created_at_ms, hook.at_ms)


def hook_from(row: asyncpg.Record | dict[str, Any]) -> WebhookStored:
    """The record a ``webhooks`` row holds."""
    return WebhookStored(
        row["name"], row["tenant"], row["url"], tuple(row["events"]), row["filter"],
        row["secret"],
        row["max_attempts"], row["backoff_ms"], row["backoff_max_ms"], row["deleted"],
        row["created_at_ms"], row["at_ms"])


async def store_hooks(pool: asyncpg.Pool, hooks: Iterable[WebhookStored]) -> None:
    """Write records to ``webhooks`` (a later record of a name wins)."""
    rows = [hook_args(h) for h in hooks]
    if rows:
        await pool.executemany(UPSERT_HOOK, rows)


async def read_hook(pool: asyncpg.Pool, name: str) -> WebhookStored | None:
    """The name's last record (deleted or not), or None."""
    row = await pool.fetchrow(f"select {HOOK_COLUMNS} from webhooks where name = $1", name)
    return None if row is None else hook_from(row)


async def live_hooks(pool: asyncpg.Pool) -> list[WebhookStored]:
    """Every webhook not deleted."""
    rows = await pool.fetch(f"select {HOOK_COLUMNS} from webhooks where not deleted")
    return [hook_from(r) for r in rows]


def at(ms: int) -> datetime:
    """A time of ms since the epoch as PostgreSQL's ``timestamptz``."""
    return datetime.fromtimestamp(ms / 1000, UTC)


async def store_decided(pool: asyncpg.Pool, decided: Sequence[Decided],
                        tenants: dict[str, str | None], now_ms: int) -> None:
    """Keep decided deliveries, due at once (a delivery already kept stays as it is).

    Args:
        pool: the projection's pool.
        decided: the deliveries.
        tenants: each webhook's tenant, by name.
        now_ms: when they were decided, ms since the epoch.
    """
    rows = [(d.delivery_id, d.webhook, tenants.get(d.webhook), d.workflow_id, d.seq, d.event,
             d.body, at(now_ms)) for d in decided]
    if rows:
        await pool.executemany(INSERT_DELIVERY, rows)


async def lease_due(pool: asyncpg.Pool, now_ms: int, lease_ms: int,
                    limit: int) -> list[asyncpg.Record]:
    """Take up to ``limit`` deliveries whose next attempt is due, for ``lease_ms``: no
    other deliverer takes them meanwhile (one that dies holding them lets them go when
    the lease ends)."""
    return list(await pool.fetch(LEASE_DUE, at(now_ms), at(now_ms + lease_ms), limit))


async def record_attempt(pool: asyncpg.Pool, delivery_id: str, attempt: dict[str, Any],
                         then: Next, now_ms: int) -> None:
    """Keep one attempt's outcome and what follows (``then``: its status, when the next
    attempt is due, a dead delivery's reason)."""
    await pool.execute(RECORD_ATTEMPT, delivery_id, [attempt], then.status,
                       None if then.retry_at_ms is None else at(then.retry_at_ms),
                       then.reason, at(now_ms))



async def redeliver(pool: asyncpg.Pool, webhook: str, delivery_id: str, now_ms: int) -> str | None:
    """Make a delivered or dead delivery of ``webhook`` due again now, for one more
    attempt (its attempts stay; past ``max_attempts``, a failure makes it dead again).

    Returns:
        None when done; else the delivery's status (``pending``: it is due already), or
        ``unknown`` when the webhook has no such delivery.
    """
    if await pool.fetchval(REDELIVER, delivery_id, webhook, at(now_ms)) is not None:
        return None
    status: str | None = await pool.fetchval(
        "select status from webhook_deliveries where delivery_id = $1 and webhook = $2",
        delivery_id, webhook)
    return status or "unknown"
