"""``Client.triggers`` and ``AsyncClient.triggers`` against ``httpx.MockTransport``: the
requests they make, the views of the answers, a 404 as ``NotFound`` and a 422 as
``Unprocessable``, and a ``PUT`` retried after a 503 with the same body."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from headwater import errors
from headwater.client import AsyncClient, Client, Trigger, retry

SETTINGS = {"topic": "shop.orders", "format": "json", "filter": [], "input": "${value}",
            "id": None, "definition": "ship", "start": "latest"}
TRIGGER = {"name": "orders", "tenant": None, "settings": SETTINGS, "at_ms": 1,
           "lag": {"trigger": "-/orders", "lag": 3, "partitions": []},
           "links": {"self": "/v1/triggers/orders"}}


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries without waiting."""
    monkeypatch.setattr(retry, "delay_s", lambda *a: 0.0)


class Gateway:
    """Answers as the gateway does; records ``(method, path, body)``."""

    def __init__(self, fail_first: int = 0) -> None:
        self.asked: list[tuple[str, str, Any]] = []
        self.fail_first = fail_first

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.asked.append((request.method, request.url.path, body))
        problem = {"content-type": "application/problem+json"}
        if len(self.asked) <= self.fail_first:
            return httpx.Response(503, json={"title": "Kafka unavailable", "status": 503},
                                  headers=problem)
        if request.url.path.endswith("/none"):
            return httpx.Response(404, json={"title": "Not found", "status": 404,
                                             "detail": "no trigger none"}, headers=problem)
        if request.method == "PUT":
            if body.get("format") != "xml":
                return httpx.Response(201, json=TRIGGER)
            return httpx.Response(422, json={"title": "Invalid request", "status": 422,
                                             "errors": ["format: one of json, avro, bytes"]},
                                  headers=problem)
        answers = {"/v1/triggers": {"items": [TRIGGER, {**TRIGGER, "lag": None}]},
                   "/v1/triggers/orders": TRIGGER}
        if request.method == "GET":
            return httpx.Response(200, json=answers[request.url.path])
        return httpx.Response(200, json={"name": "orders", "deleted": True})


def test_the_blocking_client_puts_lists_shows_and_deletes() -> None:
    gateway = Gateway(fail_first=1)
    with Client("http://gw", transport=httpx.MockTransport(gateway)) as hw:
        put = hw.triggers.put("orders", topic="shop.orders", definition="ship",
                              filter=[{"pointer": "/value/kind", "equals": "order"}],
                              start="earliest")
        assert put == Trigger("orders", None, "shop.orders", "ship", SETTINGS, 3, TRIGGER)
        assert [t.lag for t in hw.triggers.list()] == [3, None]
        assert hw.triggers.get("orders").raw["links"] == {"self": "/v1/triggers/orders"}
        hw.triggers.delete("orders")
        with pytest.raises(errors.NotFound):
            hw.triggers.get("none")
        with pytest.raises(errors.Unprocessable):
            hw.triggers.apply("orders", {"topic": "t", "definition": "d", "format": "xml"})
    body = {"topic": "shop.orders", "definition": "ship", "start": "earliest",
            "filter": [{"pointer": "/value/kind", "equals": "order"}]}
    assert gateway.asked[:2] == [("PUT", "/v1/triggers/orders", body)] * 2  # retried
    assert [(m, p) for m, p, _ in gateway.asked[2:5]] == [
        ("GET", "/v1/triggers"), ("GET", "/v1/triggers/orders"),
        ("DELETE", "/v1/triggers/orders")]


async def test_the_async_client_does_the_same() -> None:
    gateway = Gateway()
    async with AsyncClient("http://gw", transport=httpx.MockTransport(gateway)) as hw:
        put = await hw.triggers.put("orders", topic="shop.orders", definition="ship",
                                    input={"n": "${value.n}"})
        assert put.definition == "ship" and put.lag == 3
        assert len(await hw.triggers.list()) == 2
        assert (await hw.triggers.get("orders")).topic == "shop.orders"
        await hw.triggers.delete("orders")
        with pytest.raises(errors.NotFound):
            await hw.triggers.delete("none")
    assert gateway.asked[0] == ("PUT", "/v1/triggers/orders", {
        "topic": "shop.orders", "definition": "ship", "input": {"n": "${value.n}"}})
