"""An in-memory stand-in for the PostgreSQL pool of the webhooks' tables, answering the
statements of ``services/webhooks/store.py`` (and the deliverer's read of ``workflows``)
by their text."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from headwater.webhooks import WebhookStored
from services.webhooks.store import hook_args


@dataclass
class StorePool:
    """``hooks`` by name, ``deliveries`` by id, ``workflows`` (tenant, name, definition)
    by id."""

    hooks: dict[str, WebhookStored] = field(default_factory=dict)
    deliveries: dict[str, dict[str, Any]] = field(default_factory=dict)
    workflows: dict[str, dict[str, Any]] = field(default_factory=dict)
    reads_of_workflows: int = 0

    async def fetch(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        if sql.startswith("select name, tenant"):
            return [dict(zip(("name", "tenant", "url", "events", "filter", "secret",
                              "max_attempts", "backoff_ms", "backoff_max_ms", "deleted",
                              "created_at_ms", "at_ms"), hook_args(h), strict=True))
                    for h in self.hooks.values() if not h.deleted]
        if "from workflows" in sql:
            self.reads_of_workflows += 1
            return [{"workflow_id": i, "code_nodes": [], "labels": None,
                     **self.workflows[i]}
                    for i in args[0] if i in self.workflows]
        if sql.startswith("update webhook_deliveries d set lease_until"):
            now, until, limit = args
            due = [d for d in sorted(self.deliveries.values(), key=lambda d: d["next_at"])
                   if d["status"] == "pending" and d["next_at"] <= now
                   and (d["lease_until"] is None or d["lease_until"] < now)][:limit]
            for d in due:
                d["lease_until"] = until
            return [dict(d) for d in due]
        raise AssertionError(sql)

    async def executemany(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if sql.startswith("insert into webhook_deliveries"):
            for delivery, webhook, tenant, wid, seq, event, body, at in rows:
                self.deliveries.setdefault(delivery, {
                    "delivery_id": delivery, "webhook": webhook, "tenant": tenant,
                    "workflow_id": wid, "seq": seq, "event": event, "body": body,
                    "status": "pending", "attempts": [], "next_at": at, "lease_until": None,
                    "reason": "", "created_at": at})
            return
        if sql.startswith("insert into webhooks"):
            for row in rows:
                self.hooks[row[0]] = WebhookStored(row[0], row[1], row[2], tuple(row[3]),
                                                   *row[4:])
            return
        raise AssertionError(sql)

    async def execute(self, sql: str, *args: Any) -> str:
        assert sql.startswith("update webhook_deliveries set attempts"), sql
        delivery, attempts, status, next_at, reason, now = args
        d = self.deliveries[delivery]
        if d["status"] == "pending":
            d.update(attempts=d["attempts"] + attempts, status=status, next_at=next_at,
                     reason=reason, lease_until=None, updated_at=now)
        return "UPDATE 1"


def later(a: datetime, b: datetime) -> float:
    """Seconds from ``a`` to ``b``."""
    return (b - a).total_seconds()
