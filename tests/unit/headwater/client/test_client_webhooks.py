"""``Client.webhooks`` and ``AsyncClient.webhooks`` against ``httpx.MockTransport``: the
requests they make (paths, bodies, query), the documents they return, ``NotFound`` for a
404, and a ``PUT`` retried after a 503 with the same body."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from headwater import errors
from headwater.client import AsyncClient, Client, retry

HOOK = {"name": "ops", "url": "https://x.test/h", "events": ["run.failed"],
        "filter": {"names": [], "definitions": []}, "retry": {"max_attempts": 8}}
DELIVERY = {"id": "d_1", "status": "dead", "attempts": [{"n": 1, "status_code": 500}]}


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "delay_s", lambda *a: 0.0)


class Gateway:
    """Answers as the gateway does; records ``(method, path?query, body)``."""

    def __init__(self, fail_first: int = 0) -> None:
        self.asked: list[tuple[str, str, Any]] = []
        self.fail_first = fail_first

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.asked.append((request.method, request.url.raw_path.decode(), body))
        problem = {"content-type": "application/problem+json"}
        if len(self.asked) <= self.fail_first:
            return httpx.Response(503, json={"title": "Kafka unavailable", "status": 503},
                                  headers=problem)
        if "/none" in request.url.path:
            return httpx.Response(404, json={"title": "Not found", "status": 404},
                                  headers=problem)
        if request.method != "GET":
            return httpx.Response({"PUT": 201, "POST": 202}.get(request.method, 204),
                                  json=DELIVERY if request.method == "POST" else HOOK)
        if request.url.path.endswith("/deliveries"):
            return httpx.Response(200, json={"items": [DELIVERY], "next_cursor": None})
        if request.url.path == "/v1/webhooks":
            return httpx.Response(200, json={"items": [HOOK], "next_cursor": None})
        return httpx.Response(200, json=HOOK)


def test_the_calls_and_their_answers() -> None:
    gateway = Gateway()
    with Client("http://gw", transport=httpx.MockTransport(gateway)) as hw:
        assert hw.webhooks.put("ops", url="https://x.test/h", events=["run.failed"],
                               secret="s" * 16, filter={"names": ["refund"]},
                               retry={"max_attempts": 3}) == HOOK
        assert hw.webhooks.list() == [HOOK]
        assert hw.webhooks.get("ops") == HOOK
        assert hw.webhooks.deliveries("ops", status="dead", workflow_id="wf-1") == [DELIVERY]
        hw.webhooks.delete("a b")
        assert hw.webhooks.redeliver("ops", "d_1") == DELIVERY
        with pytest.raises(errors.NotFound):
            hw.webhooks.get("none")
    assert gateway.asked[:6] == [
        ("PUT", "/v1/webhooks/ops", {"url": "https://x.test/h", "events": ["run.failed"],
                                     "secret": "s" * 16, "filter": {"names": ["refund"]},
                                     "retry": {"max_attempts": 3}}),
        ("GET", "/v1/webhooks?limit=500", None),
        ("GET", "/v1/webhooks/ops", None),
        ("GET", "/v1/webhooks/ops/deliveries?limit=500&status=dead&workflow_id=wf-1", None),
        ("DELETE", "/v1/webhooks/a%20b", None),
        ("POST", "/v1/webhooks/ops/deliveries/d_1/retry", None)]


def test_a_put_is_retried_after_a_503_with_the_same_body() -> None:
    gateway = Gateway(fail_first=1)
    with Client("http://gw", transport=httpx.MockTransport(gateway)) as hw:
        hw.webhooks.apply("ops", {"url": "https://x.test/h", "events": ["run.ended"],
                                  "secret": "s" * 16})
    assert len(gateway.asked) == 2 and gateway.asked[0] == gateway.asked[1]
    assert "filter" not in gateway.asked[0][2]


async def test_the_async_client_makes_the_same_calls() -> None:
    gateway = Gateway()
    async with AsyncClient("http://gw", transport=httpx.MockTransport(gateway)) as hw:
        assert await hw.webhooks.put("ops", url="https://x.test/h", events=["run.failed"],
                                     secret="s" * 16) == HOOK
        assert await hw.webhooks.list() == [HOOK]
        assert await hw.webhooks.get("ops") == HOOK
        assert await hw.webhooks.deliveries("ops") == [DELIVERY]
        await hw.webhooks.delete("ops")
        assert await hw.webhooks.redeliver("ops", "d_1") == DELIVERY
    assert [(m, p) for m, p, _ in gateway.asked][:-1] == [
        ("PUT", "/v1/webhooks/ops"), ("GET", "/v1/webhooks?limit=500"),
        ("GET", "/v1/webhooks/ops"), ("GET", "/v1/webhooks/ops/deliveries?limit=500"),
        ("DELETE", "/v1/webhooks/ops")]
