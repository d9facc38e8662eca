"""``/v1/webhooks``: a ``PUT`` is checked at the edge (every fault named), written as a
``WebhookStored`` record (the topic first, then the table), answered without its
secret, 201 then 200; ``GET`` and the list never show the secret; ``DELETE`` writes the
record deleted; deliveries are listed with their attempts, filtered and paged; every
route is scoped by tenant (another tenant's webhook is 404, its name 409 on ``PUT``);
Kafka not acknowledging is a 503."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from gateway_harness import UNREACHABLE, FakePool, FakeProducer, assert_problem
from tenant_harness import Tenants, tenants

from headwater.webhooks import WebhookStored
from services.gateway.webhooks import define
from services.webhooks.store import HOOK_COLUMNS, REDELIVER, UPSERT_HOOK, hook_args

SECRET = "a-secret-of-sixteen+"
BODY: dict[str, Any] = {"url": "https://ops.example.com/h", "events": ["run.failed"],
                        "secret": SECRET}
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@dataclass
class WebhookPool(FakePool):
    """``FakePool`` with the ``webhooks`` and ``webhook_deliveries`` tables in memory."""

    hooks: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    deliveries: list[dict[str, Any]] = field(default_factory=list)

    def _row(self, args: tuple[Any, ...]) -> dict[str, Any]:
        return dict(zip(HOOK_COLUMNS.replace(" ", "").split(","), args, strict=True))

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        await self._enter()
        if "from webhooks where name" in sql:
            found = self.hooks.get(args[0])
            return None if found is None else self._row(found)
        return await super().fetchrow(sql, *args)

    async def executemany(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        await self._enter()
        assert sql == UPSERT_HOOK
        for row in rows:
            if row[0] not in self.hooks or self.hooks[row[0]][-1] <= row[-1]:
                self.hooks[row[0]] = row

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        await self._enter()
        if "from webhooks where not deleted" in sql:
            tenant, cursor, limit = args
            return [self._row(r) for n, r in sorted(self.hooks.items()) if not r[9]
                    and (tenant is None or r[1] == tenant)
                    and (cursor is None or n > cursor)][:limit]
        if "from webhook_deliveries" in sql:
            name, status, wid, after_at, after_id, limit, one = args
            rows = sorted((d for d in self.deliveries if d["webhook"] == name
                           and (one is None or d["delivery_id"] == one)
                           and (status is None or d["status"] == status)
                           and (wid is None or d["workflow_id"] == wid)
                           and (after_at is None or (d["created_at"], d["delivery_id"])
                                < (after_at, after_id))),
                          key=lambda d: (d["created_at"], d["delivery_id"]), reverse=True)
            return rows[:limit]
        return await super().fetch(sql, *args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        await self._enter()
        found = [d for d in self.deliveries if (d["delivery_id"], d["webhook"]) == args[:2]]
        if sql == REDELIVER:
            if not found or found[0]["status"] == "pending":
                return None
            found[0].update(status="pending", next_at=args[2], reason="", updated_at=args[2])
            return found[0]["delivery_id"]
        if sql.startswith("select status from webhook_deliveries"):
            return found[0]["status"] if found else None
        return await super().fetchval(sql, *args)

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[WebhookPool]:
        await self._enter()
        yield self


@pytest.fixture
def t(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Tenants, WebhookPool]]:
    monkeypatch.setattr(define, "_created", {UNREACHABLE.topics.webhooks})
    with tenants(tmp_path) as found:
        pool = WebhookPool()
        found.gw.connect(pool, found.producer)
        yield found, pool


def _records(t: Tenants) -> list[WebhookStored]:
    return [r for topic, _, r in t.producer.sent if topic == UNREACHABLE.topics.webhooks]


def test_a_put_writes_the_record_and_answers_without_the_secret(t: Any) -> None:
    tn, pool = t
    answer = tn.call("A", "PUT", "/v1/webhooks/ops", json={
        **BODY, "events": ["run.waiting", "run.ended"], "filter": {"names": ["refund"]},
        "retry": {"max_attempts": 3, "backoff_s": 0.5, "backoff_max_s": 30}})
    assert answer.status_code == 201, answer.text
    assert answer.headers["location"] == "/v1/webhooks/ops"
    assert SECRET not in answer.text
    doc = answer.json()
    assert doc["events"] == ["run.ended", "run.waiting"] and doc["tenant"] == "A"
    assert doc["filter"] == {"names": ["refund"], "definitions": [], "labels": {}}
    assert doc["retry"] == {"max_attempts": 3, "backoff_s": 0.5, "backoff_max_s": 30.0}
    [record] = _records(tn)
    assert (record.name, record.tenant, record.secret, record.backoff_ms,
            record.backoff_max_ms, record.deleted) == ("ops", "A", SECRET, 500, 30_000, False)
    assert pool.hooks["ops"] == hook_args(record)  # then the table
    again = tn.call("A", "PUT", "/v1/webhooks/ops", json={**BODY, "url": "http://x.test/2"})
    assert again.status_code == 200, again.text
    second = _records(tn)[1]
    assert second.created_at_ms == record.created_at_ms and second.url == "http://x.test/2"


def test_get_and_the_list_show_no_secret(t: Any) -> None:
    tn, _ = t
    tn.call("A", "PUT", "/v1/webhooks/ops", json=BODY)
    tn.call("A", "PUT", "/v1/webhooks/alerts", json=BODY)
    one = tn.call("A", "GET", "/v1/webhooks/ops")
    assert one.status_code == 200 and SECRET not in one.text
    assert one.json()["links"]["deliveries"] == "/v1/webhooks/ops/deliveries"
    listed = tn.call("A", "GET", "/v1/webhooks", params={"limit": 1})
    assert [h["name"] for h in listed.json()["items"]] == ["alerts"]
    assert listed.json()["next_cursor"] == "alerts" and SECRET not in listed.text
    rest = tn.call("A", "GET", "/v1/webhooks", params={"cursor": "alerts"}).json()
    assert [h["name"] for h in rest["items"]] == ["ops"] and rest["next_cursor"] is None


@pytest.mark.parametrize(("body", "fault"), [
    ({**BODY, "url": "ftp://x.test/h"}, "url: Value error, an http:// or https:// URL"),
    ({**BODY, "url": "http:///nohost"}, "url: Value error"),
    ({**BODY, "url": "http://127.0.0.1:99999/"}, "url: Value error, a URL with a port"),
    ({**BODY, "url": " http://x.test/h"}, "url: Value error, a URL without spaces"),
    ({**BODY, "url": "http://user:pw@x.test/h"}, "url: Value error, a URL without user"),
    ({**BODY, "events": []}, "events: List should have at least 1 item"),
    ({**BODY, "events": ["run.started"]}, "events.0: Input should be"),
    ({**BODY, "secret": "short"}, "secret: String should have at least 16 characters"),
    ({**BODY, "filter": {"labels": {"Team!": "b"}}}, "filter.labels: Value error, "
     "filter.labels: key 'Team!' must be"),
    ({**BODY, "filter": {"labels": {"a": 1}}}, "filter.labels.a: Input should be a valid"),
    ({**BODY, "filter": {"colours": ["red"]}}, "filter.colours: Extra inputs"),
    ({**BODY, "retry": {"max_attempts": 0}}, "retry.max_attempts: Input should be greater"),
    ({**BODY, "retry": {"max_attempts": 51}}, "retry.max_attempts: Input should be less"),
    ({"url": "http://x.test"}, "events: Field required"),
    ({**BODY, "colour": "red"}, "colour: Extra inputs are not permitted"),
])
def test_a_bad_body_is_422_naming_the_field(t: Any, body: dict[str, Any], fault: str) -> None:
    tn, _ = t
    doc = assert_problem(tn.call("A", "PUT", "/v1/webhooks/ops", json=body), 422,
                         "Invalid request")
    assert any(e.startswith(fault) for e in doc["errors"]), doc["errors"]
    assert _records(tn) == []


def test_a_value_postgresql_cannot_hold_is_422_before_anything_is_written(t: Any) -> None:
    tn, pool = t
    doc = assert_problem(tn.call("A", "PUT", "/v1/webhooks/ops", json={
        **BODY, "filter": {"names": ["a\x00b"]}}), 422, "Invalid request")
    assert doc["errors"] == ["filter.names[0]: contains U+0000"]
    assert _records(tn) == [] and pool.hooks == {}


def test_a_bad_name_is_422(t: Any) -> None:
    tn, _ = t
    doc = assert_problem(tn.call("A", "PUT", "/v1/webhooks/-bad", json=BODY), 422)
    assert doc["errors"][0].startswith("name: webhook name '-bad' is invalid")


def test_another_tenants_webhook_is_not_found_and_its_name_is_taken(t: Any) -> None:
    tn, _ = t
    assert tn.call("A", "PUT", "/v1/webhooks/ops", json=BODY).status_code == 201
    for method, path in (("GET", ""), ("DELETE", ""), ("GET", "/deliveries")):
        assert_problem(tn.call("B", method, f"/v1/webhooks/ops{path}"), 404, "Not found")
    assert_problem(tn.call("B", "PUT", "/v1/webhooks/ops", json=BODY), 409, "Conflict")
    assert tn.call("B", "GET", "/v1/webhooks").json()["items"] == []
    everyone = tn.call("*", "PUT", "/v1/webhooks/ops", json=BODY)  # an operator's
    assert everyone.status_code == 200 and everyone.json()["tenant"] == "A"
    shared = tn.call("*", "PUT", "/v1/webhooks/all", json=BODY)
    assert shared.json()["tenant"] is None
    assert_problem(tn.call("A", "GET", "/v1/webhooks/all"), 404)  # not A's
    assert_problem(tn.call("A-read", "PUT", "/v1/webhooks/x", json=BODY), 403)


def test_delete_writes_the_record_deleted_then_it_is_gone(t: Any) -> None:
    tn, pool = t
    tn.call("A", "PUT", "/v1/webhooks/ops", json=BODY)
    assert tn.call("A", "DELETE", "/v1/webhooks/ops").status_code == 204
    deleted = _records(tn)[-1]
    assert deleted.deleted and deleted.secret == "" and pool.hooks["ops"][9] is True
    assert_problem(tn.call("A", "GET", "/v1/webhooks/ops"), 404)
    assert_problem(tn.call("A", "DELETE", "/v1/webhooks/ops"), 404)
    again = tn.call("A", "PUT", "/v1/webhooks/ops", json=BODY)
    assert again.status_code == 201  # a new webhook, created now
    assert _records(tn)[-1].created_at_ms >= deleted.at_ms


def _delivery(n: int, status: str, wid: str = "wf-1") -> dict[str, Any]:
    body = orjson.dumps({"id": f"d_{n}", "event": "run.failed"})
    return {"delivery_id": f"d_{n}", "webhook": "ops", "workflow_id": wid, "seq": n,
            "event": "run.failed", "body": body, "status": status,
            "attempts": [{"n": 1, "at": T0.isoformat(), "status_code": 500, "error": "",
                          "ms": 3}],
            "next_at": T0 + timedelta(seconds=9), "reason": "after 1 attempts: HTTP 500"
            if status == "dead" else "", "created_at": T0 + timedelta(seconds=n),
            "updated_at": T0}


def test_deliveries_are_listed_newest_first_with_their_attempts(t: Any) -> None:
    tn, pool = t
    tn.call("A", "PUT", "/v1/webhooks/ops", json=BODY)
    pool.deliveries += [_delivery(1, "dead"), _delivery(2, "pending"),
                        _delivery(3, "pending", "wf-2")]
    page = tn.call("A", "GET", "/v1/webhooks/ops/deliveries", params={"limit": 2}).json()
    assert [d["id"] for d in page["items"]] == ["d_3", "d_2"]
    first = page["items"][0]
    assert first["attempts"][0]["status_code"] == 500
    assert first["next_attempt_at"] == (T0 + timedelta(seconds=9)).isoformat()
    assert first["body"] == {"id": "d_3", "event": "run.failed"} and first["reason"] is None
    rest = tn.call("A", "GET", "/v1/webhooks/ops/deliveries",
                   params={"cursor": page["next_cursor"]}).json()
    assert [d["id"] for d in rest["items"]] == ["d_1"] and rest["next_cursor"] is None
    dead = rest["items"][0]
    assert (dead["status"], dead["reason"], dead["next_attempt_at"]) == (
        "dead", "after 1 attempts: HTTP 500", None)
    only = tn.call("A", "GET", "/v1/webhooks/ops/deliveries",
                   params={"status": "pending", "workflow_id": "wf-1"}).json()
    assert [d["id"] for d in only["items"]] == ["d_2"]
    assert_problem(tn.call("A", "GET", "/v1/webhooks/ops/deliveries",
                           params={"status": "lost"}), 422)
    assert_problem(tn.call("A", "GET", "/v1/webhooks/ops/deliveries",
                           params={"cursor": "not-ours"}), 400, "Bad cursor")


def test_a_dead_delivery_is_made_due_again_once(t: Any) -> None:
    tn, pool = t
    tn.call("A", "PUT", "/v1/webhooks/ops", json=BODY)
    pool.deliveries += [_delivery(1, "dead"), _delivery(2, "pending")]
    retried = tn.call("A", "POST", "/v1/webhooks/ops/deliveries/d_1/retry")
    assert retried.status_code == 202, retried.text
    doc = retried.json()
    assert (doc["id"], doc["status"], doc["reason"]) == ("d_1", "pending", None)
    assert doc["next_attempt_at"] is not None and len(doc["attempts"]) == 1
    again = assert_problem(tn.call("A", "POST", "/v1/webhooks/ops/deliveries/d_1/retry"),
                           409, "Conflict")
    assert "is pending" in again["detail"]
    assert_problem(tn.call("A", "POST", "/v1/webhooks/ops/deliveries/d_9/retry"), 404)
    assert_problem(tn.call("B", "POST", "/v1/webhooks/ops/deliveries/d_2/retry"), 404)
    assert_problem(tn.call("A-read", "POST", "/v1/webhooks/ops/deliveries/d_2/retry"), 403)


def test_kafka_not_acknowledging_is_503_and_nothing_is_written(t: Any) -> None:
    tn, pool = t
    tn.gw.connect(pool, FakeProducer(stall=True))
    doc = assert_problem(tn.call("A", "PUT", "/v1/webhooks/ops", json=BODY), 503,
                         "Kafka unavailable")
    assert "retrying is safe" in doc["detail"] and pool.hooks == {}
