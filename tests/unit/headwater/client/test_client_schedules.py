"""``Client.schedules`` and ``AsyncClient.schedules`` against ``httpx.MockTransport``:
the requests they make, the views of the answers, errors by status, and a ``PUT``
retried after a 503 with the same body."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from headwater import errors
from headwater.client import AsyncClient, Client, retry
from headwater.client.types import DefinitionRef

SCHEDULE = {"name": "nightly", "generation": 2, "workflow_id": "schedule:nightly:2",
            "status": "running", "cron": "0 2 * * *", "timezone": "Europe/Paris",
            "definition": {"name": "billing", "version": 3}, "paused": False,
            "next_fire_at": "2026-12-02T01:00:00+00:00", "last_fire_at": None,
            "last_run_id": None, "fired": 0, "skipped": 1, "runs": []}
APPLIED = {"name": "nightly", "generation": 2, "workflow_id": "schedule:nightly:2",
           "created": True}


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
        self.asked.append((request.method, request.url.raw_path.decode(), body))
        if len(self.asked) <= self.fail_first:
            return httpx.Response(503, json={"title": "Kafka unavailable", "status": 503},
                                  headers={"content-type": "application/problem+json"})
        path = request.url.path
        if path.endswith("/none") or "/none/" in path:
            return httpx.Response(404, json={"title": "Not found", "status": 404,
                                             "detail": "no schedule none"},
                                  headers={"content-type": "application/problem+json"})
        if request.method == "PUT":
            return httpx.Response(201, json=APPLIED)
        if request.method == "GET" and path == "/v1/schedules":
            cursor = request.url.params.get("cursor")
            return httpx.Response(200, json={"items": [SCHEDULE] if cursor else
                                             [{**SCHEDULE, "name": "a"}],
                                             "next_cursor": None if cursor else "a"})
        if request.method == "GET":
            return httpx.Response(200, json=SCHEDULE)
        return httpx.Response(202 if request.method == "POST" else 204, json={})


def test_the_blocking_client_puts_lists_shows_pauses_resumes_and_deletes() -> None:
    gateway = Gateway()
    with Client("http://gw", transport=httpx.MockTransport(gateway)) as hw:
        applied = hw.schedules.put("nightly", cron="0 2 * * *", definition="billing",
                                   input={"n": 1}, timezone="Europe/Paris")
        assert (applied.generation, applied.created) == (2, True)
        found = hw.schedules.list()
        one = hw.schedules.get("nightly")
        hw.schedules.pause("nightly")
        hw.schedules.resume("nightly")
        hw.schedules.delete("nightly")
        with pytest.raises(errors.NotFound, match="no schedule none"):
            hw.schedules.get("none")
    assert [s.name for s in found] == ["a", "nightly"]
    assert one.definition == DefinitionRef("billing", 3) and one.skipped == 1
    assert one.next_fire_at == SCHEDULE["next_fire_at"] and one.raw["runs"] == []
    assert [(m, p) for m, p, _ in gateway.asked] == [
        ("PUT", "/v1/schedules/nightly"), ("GET", "/v1/schedules?limit=500"),
        ("GET", "/v1/schedules?limit=500&cursor=a"), ("GET", "/v1/schedules/nightly"),
        ("POST", "/v1/schedules/nightly/pause"), ("POST", "/v1/schedules/nightly/resume"),
        ("DELETE", "/v1/schedules/nightly"), ("GET", "/v1/schedules/none")]
    assert gateway.asked[0][2] == {"cron": "0 2 * * *", "definition": "billing",
                                   "input": {"n": 1}, "timezone": "Europe/Paris"}


def test_a_put_is_retried_with_the_same_body_after_a_503() -> None:
    gateway = Gateway(fail_first=1)
    with Client("http://gw", transport=httpx.MockTransport(gateway)) as hw:
        hw.schedules.apply("a b", {"cron": "* * * * *", "definition": "d"})
    assert [p for _, p, _ in gateway.asked] == ["/v1/schedules/a%20b"] * 2
    assert gateway.asked[0][2] == gateway.asked[1][2]


async def test_the_async_client_does_the_same() -> None:
    gateway = Gateway()
    async with AsyncClient("http://gw", transport=httpx.MockTransport(gateway)) as hw:
        applied = await hw.schedules.put("nightly", cron="0 2 * * *", definition="billing",
                                         overlap="allow")
        found = await hw.schedules.list()
        one = await hw.schedules.get("nightly")
        await hw.schedules.pause("nightly")
        await hw.schedules.resume("nightly")
        await hw.schedules.delete("nightly")
        with pytest.raises(errors.NotFound):
            await hw.schedules.delete("none")
    assert applied.workflow_id == "schedule:nightly:2" and len(found) == 2
    assert one.cron == "0 2 * * *" and one.paused is False
    assert [m for m, _, _ in gateway.asked] == ["PUT", "GET", "GET", "GET", "POST", "POST",
                                                "DELETE", "DELETE"]
    assert gateway.asked[0][2] == {"cron": "0 2 * * *", "definition": "billing",
                                   "input": None, "overlap": "allow"}
