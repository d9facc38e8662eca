"""What ``GET /v1/webhooks`` and ``.../deliveries`` answer: webhooks without their secret,
and deliveries with their attempts (the ``webhooks`` and ``webhook_deliveries`` tables,
``services/webhooks/store.py``)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import asyncpg
import orjson

from headwater.webhooks import WebhookStored
from services.common.auth.tokens import Principal
from services.gateway.edge.problems import Problem
from services.webhooks.store import HOOK_COLUMNS, hook_from

DELIVERY_STATUSES = ("pending", "delivered", "dead")


def _iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def hook_view(hook: WebhookStored) -> dict[str, Any]:
    """A webhook as the API shows it: everything but its secret."""
    where = f"/v1/webhooks/{quote(hook.name, safe='')}"
    return {
        "name": hook.name, "tenant": hook.tenant, "url": hook.url, "events": list(hook.events),
        "filter": hook.filter,
        "retry": {"max_attempts": hook.max_attempts, "backoff_s": hook.backoff_ms / 1000,
                  "backoff_max_s": hook.backoff_max_ms / 1000},
        "created_at": _iso_ms(hook.created_at_ms), "updated_at": _iso_ms(hook.at_ms),
        "links": {"self": where, "deliveries": f"{where}/deliveries"},
    }


async def read_hooks(pool: asyncpg.Pool, me: Principal, limit: int,
                     cursor: str | None) -> dict[str, Any]:
    """A page of the live webhooks ``me`` sees, by name, after ``cursor`` (a name)."""
    rows = await pool.fetch(
        f"select {HOOK_COLUMNS} from webhooks where not deleted"
        " and ($1::text is null or tenant = $1) and ($2::text is null or name > $2)"
        " order by name limit $3", None if me.every_tenant else me.tenant, cursor, limit + 1)
    items = [hook_view(hook_from(r)) for r in rows[:limit]]
    return {"items": items, "next_cursor": items[-1]["name"] if len(rows) > limit else None}


def _cursor(row: asyncpg.Record) -> str:
    text = f"{row['created_at'].isoformat()}|{row['delivery_id']}"
    return base64.urlsafe_b64encode(text.encode()).decode()


def parse_cursor(cursor: str | None) -> tuple[datetime, str] | None:
    """A deliveries cursor's position (created at, id); None for the first page.

    Raises:
        Problem: 400 for a cursor this gateway did not give.
    """
    if cursor is None:
        return None
    try:
        created, delivery = base64.urlsafe_b64decode(cursor.encode()).decode().split("|", 1)
        return datetime.fromisoformat(created), delivery
    except (ValueError, UnicodeDecodeError) as e:
        raise Problem(400, "Bad cursor", "cursor: not one a page of deliveries gave") from e


def delivery_view(row: asyncpg.Record) -> dict[str, Any]:
    """A delivery with its attempts and, while pending, when the next is due."""
    body = bytes(row["body"])
    try:
        payload: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        payload = None
    return {
        "id": row["delivery_id"], "webhook": row["webhook"], "workflow_id": row["workflow_id"],
        "seq": row["seq"], "event": row["event"], "status": row["status"],
        "attempts": row["attempts"],
        "next_attempt_at": (row["next_at"].isoformat()
                            if row["status"] == "pending" and row["next_at"] else None),
        "reason": row["reason"] or None, "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(), "body": payload,
    }


@dataclass(frozen=True)
class Which:
    """Which of a webhook's deliveries a page holds (None: any).

    Attributes:
        status: ``pending``, ``delivered`` or ``dead``.
        workflow_id: one run's.
        delivery_id: one delivery.
    """

    status: str | None = None
    workflow_id: str | None = None
    delivery_id: str | None = None


async def read_deliveries(pool: asyncpg.Pool, name: str, which: Which, limit: int,
                          cursor: str | None) -> dict[str, Any]:
    """A page of a webhook's deliveries, newest first, filtered by ``which``."""
    after = parse_cursor(cursor)
    rows = await pool.fetch(
        "select delivery_id, webhook, workflow_id, seq, event, body, status, attempts,"
        " next_at, reason, created_at, updated_at from webhook_deliveries"
        " where webhook = $1 and ($2::text is null or status = $2)"
        " and ($3::text is null or workflow_id = $3)"
        " and ($4::timestamptz is null or (created_at, delivery_id) < ($4, $5::text))"
        " and ($7::text is null or delivery_id = $7)"
        " order by created_at desc, delivery_id desc limit $6",
        name, which.status, which.workflow_id, after[0] if after else None,
        after[1] if after else None, limit + 1, which.delivery_id)
    return {"items": [delivery_view(r) for r in rows[:limit]],
            "next_cursor": _cursor(rows[limit - 1]) if len(rows) > limit else None}
