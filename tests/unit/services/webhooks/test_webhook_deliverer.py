"""The deliverer without Kafka: ``Decider.keep`` turns a batch of events into deliveries
kept before anything is sent (the run's facts from its ``WorkflowAccepted`` in the
batch, or from the projection, waited for), the same batch again keeps nothing more;
``Sender.round`` posts each due delivery signed to its webhook's URL (an
``httpx.MockTransport``), keeps the outcome, tries a failure again at its time and
dead-letters the last, with its reason on ``dlq``."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from fake_store import StorePool
from prometheus_client import REGISTRY

from headwater.core import events as ev
from headwater.topics import Topics
from headwater.webhooks import DELIVERY_HEADER, WebhookStored, verify
from services.common.settings import CommonSettings
from services.webhooks import decider as decider_module
from services.webhooks.decider import Decider
from services.webhooks.sender import Sender

AT = 1_780_000_000_000
SECRET = "s" * 20
ACCEPTED = ev.HistoryEvent("wf-1", 1, ev.WorkflowAccepted(
    "wf-1", AT, {"name": "refund", "nodes": []}, None, "acme", "refund-def"))
FAILED = ev.HistoryEvent("wf-1", 4, ev.WorkflowFailed("wf-1", AT + 5, "boom"))


def hook(name: str = "h", **changes: Any) -> WebhookStored:
    base: dict[str, Any] = dict(
        name=name, tenant="acme", url=f"http://receiver.test/{name}", events=("run.ended",),
        filter={}, secret=SECRET, max_attempts=3, backoff_ms=1000, backoff_max_ms=10_000,
        deleted=False, created_at_ms=AT - 1, at_ms=AT - 1)
    return WebhookStored(**{**base, **changes})


def _decider(pool: StorePool, clock: list[int]) -> Decider:
    woken: list[int] = []
    d = Decider(CommonSettings(), pool, woken=lambda: woken.append(1),  # type: ignore[arg-type]
                clock=lambda: clock[0])
    d.woken_count = woken  # type: ignore[attr-defined]
    return d


async def test_a_batch_keeps_one_delivery_per_webhook_and_again_nothing_more() -> None:
    pool = StorePool(hooks={"h": hook(), "other": hook("other", tenant="globex")})
    decider = _decider(pool, [AT + 10])
    decided = await decider.keep([ACCEPTED, FAILED])
    assert [d.webhook for d in decided] == ["h"]
    [kept] = pool.deliveries.values()
    assert (kept["webhook"], kept["tenant"], kept["workflow_id"], kept["seq"],
            kept["event"], kept["status"]) == ("h", "acme", "wf-1", 4, "run.failed", "pending")
    assert pool.reads_of_workflows == 0  # the facts came with the batch
    assert decider.woken_count == [1]  # type: ignore[attr-defined]
    again = await _decider(pool, [AT + 99]).keep([ACCEPTED, FAILED])
    assert [d.delivery_id for d in again] == [d.delivery_id for d in decided]
    assert len(pool.deliveries) == 1 and kept["created_at"].timestamp() * 1000 == AT + 10


async def test_without_its_acceptance_the_run_is_read_from_the_projection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decider_module, "FACTS_POLL_S", 0.01)
    pool = StorePool(hooks={"h": hook(filter={"definitions": ["refund-def"]})})
    decider = _decider(pool, [AT])
    monkeypatch.setattr(decider_module, "FACTS_WAIT_S", 0.05)
    assert await decider.keep([FAILED]) == []  # never projected: delivered to none
    assert pool.reads_of_workflows > 1  # it waited
    pool.workflows["wf-1"] = {"tenant": "acme", "name": "refund", "definition": "refund-def"}
    assert [d.webhook for d in await decider.keep([FAILED])] == ["h"]


async def test_events_of_no_interest_read_no_webhook() -> None:
    pool = StorePool(hooks={"h": hook()})
    assert await _decider(pool, [AT]).keep([ACCEPTED]) == []
    late = StorePool(hooks={"h": hook(created_at_ms=AT + 6)})  # created after the end
    assert await _decider(late, [AT]).keep([ACCEPTED, FAILED]) == []
    assert late.deliveries == {}


def _attempts(outcome: str) -> float:
    return REGISTRY.get_sample_value("headwater_webhook_attempts_total",
                                     {"outcome": outcome}) or 0.0


class Producer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes, dict[str, bytes]]] = []

    async def send_and_wait(self, topic: str, value: bytes, key: bytes,
                            headers: list[tuple[str, bytes]]) -> None:
        self.sent.append((topic, value, key, dict(headers)))


async def test_a_due_delivery_is_posted_signed_and_kept_delivered() -> None:
    pool = StorePool(hooks={"h": hook()})
    clock = [AT + 10]
    await _decider(pool, clock).keep([ACCEPTED, FAILED])
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    sender = Sender(pool, Topics("p"), None, transport=httpx.MockTransport(answer),  # type: ignore[arg-type]
                    clock=lambda: clock[0])
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        assert await sender.round(http) == 1
        assert await sender.round(http) == 0  # nothing more is due
    [request] = seen
    [kept] = pool.deliveries.values()
    assert str(request.url) == "http://receiver.test/h"
    assert verify(SECRET, dict(request.headers), request.content, clock[0] / 1000) == \
        kept["delivery_id"]
    assert json.loads(request.content)["event"] == "run.failed"
    assert kept["status"] == "delivered" and kept["next_at"] is None
    assert [(a["n"], a["status_code"], a["error"]) for a in kept["attempts"]] == [(1, 204, "")]


async def test_a_failing_receiver_is_tried_at_its_time_then_dead_lettered() -> None:
    pool = StorePool(hooks={"h": hook()})
    clock = [AT + 10]
    await _decider(pool, clock).keep([ACCEPTED, FAILED])
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers[DELIVERY_HEADER])
        if len(seen) == 2:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(500)

    producer = Producer()
    sender = Sender(pool, Topics("p"), producer, clock=lambda: clock[0])  # type: ignore[arg-type]
    [kept] = pool.deliveries.values()
    before = {o: _attempts(o) for o in ("retried", "dead")}
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        assert await sender.round(http) == 1
        assert kept["status"] == "pending"
        clock[0] += 999  # the first wait is 1000 ms and more
        assert await sender.round(http) == 0
        clock[0] += 101
        assert await sender.round(http) == 1
        clock[0] += 2200
        assert await sender.round(http) == 1
    assert seen == [kept["delivery_id"]] * 3
    assert {o: _attempts(o) - n for o, n in before.items()} == {"retried": 2, "dead": 1}
    assert [(a["status_code"], a["error"][:12]) for a in kept["attempts"]] == [
        (500, ""), (None, "ConnectError"), (500, "")]
    assert (kept["status"], kept["reason"]) == ("dead", "after 3 attempts: HTTP 500")
    [(topic, value, key, headers)] = producer.sent
    assert (topic, key) == ("p.dlq", kept["delivery_id"].encode())
    assert headers["reason"] == b"webhook h: after 3 attempts: HTTP 500"
    assert headers["source-topic"] == b"p.webhooks" and value == kept["body"]


async def test_a_delivery_of_a_deleted_webhook_is_dead() -> None:
    pool = StorePool(hooks={"h": hook()})
    await _decider(pool, [AT + 10]).keep([ACCEPTED, FAILED])
    pool.hooks["h"] = hook(deleted=True)
    sender = Sender(pool, Topics("p"), None, clock=lambda: AT + 20)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=httpx.MockTransport(
            lambda r: pytest.fail("posted"))) as http:
        await sender.round(http)
    [kept] = pool.deliveries.values()
    assert (kept["status"], kept["reason"]) == ("dead", "the webhook was deleted")


async def test_an_unusable_url_of_a_foreign_record_fails_attempts_without_stopping() -> None:
    pool = StorePool(hooks={"h": hook(url="not a url at all", max_attempts=1)})
    await _decider(pool, [AT + 10]).keep([ACCEPTED, FAILED])
    sender = Sender(pool, Topics("p"), None, clock=lambda: AT + 20)  # type: ignore[arg-type]
    async with httpx.AsyncClient() as http:
        assert await sender.round(http) == 1
    [kept] = pool.deliveries.values()
    assert kept["status"] == "dead" and kept["reason"].startswith("after 1 attempts: ")
    assert kept["attempts"][0]["status_code"] is None and kept["attempts"][0]["error"]


async def test_one_attempt_that_raises_leaves_the_others_attempted() -> None:
    pool = StorePool(hooks={"h": hook(), "g": hook("g")})
    await _decider(pool, [AT + 10]).keep([ACCEPTED, FAILED])
    sender = Sender(pool, Topics("p"), None, clock=lambda: AT + 20)  # type: ignore[arg-type]
    real = sender.attempt

    async def attempt(http: httpx.AsyncClient, row: Any, found: Any) -> None:
        if row["webhook"] == "g":
            raise RuntimeError("a bug")
        await real(http, row, found)

    sender.attempt = attempt  # type: ignore[method-assign]
    async with httpx.AsyncClient(transport=httpx.MockTransport(
            lambda r: httpx.Response(200))) as http:
        assert await sender.round(http) == 2
    by_hook = {d["webhook"]: d for d in pool.deliveries.values()}
    assert by_hook["h"]["status"] == "delivered"
    assert by_hook["g"]["status"] == "pending" and by_hook["g"]["lease_until"] is not None


async def test_a_receiver_that_answers_slowly_fails_its_attempt_and_holds_no_other() -> None:
    """The whole attempt has the sender's timeout (httpx's bounds each read only: a
    receiver dripping its answer held every delivery of the loop), and the answer's
    body is never read."""
    pool = StorePool(hooks={"slow": hook("slow", max_attempts=1), "ok": hook("ok")})
    await _decider(pool, [AT + 10]).keep([ACCEPTED, FAILED])

    async def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("slow"):
            await asyncio.sleep(30)
        return httpx.Response(200, content=b"x" * 10_000_000)

    sender = Sender(pool, Topics("p"), None, timeout_s=0.2,  # type: ignore[arg-type]
                    clock=lambda: AT + 20)
    started = time.monotonic()
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        assert await sender.round(http) == 2
    assert time.monotonic() - started < 5
    by_hook = {d["webhook"]: d for d in pool.deliveries.values()}
    assert by_hook["ok"]["status"] == "delivered"
    assert (by_hook["slow"]["status"], by_hook["slow"]["reason"]) == (
        "dead", "after 1 attempts: no answer within 0.2 s")
