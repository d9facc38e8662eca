"""How ``POST /v1/run/{name}`` reads its request (``services.gateway.awaiting``): the
RFC 7240 ``Prefer`` header, ``Accept``, and the wait's cap; and its answers to a bad
``timeout`` or body, before anything is submitted."""

from __future__ import annotations

import pytest
from gateway_harness import FakePool, Gateway

from services.gateway.awaiting import (
    Mode,
    Preferences,
    choose_mode,
    parse_prefer,
    wait_seconds,
)


@pytest.mark.parametrize(("headers", "expected"), [
    ([], Preferences()),
    (["respond-async"], Preferences(True)),
    (["Respond-Async; foo=bar, wait=10"], Preferences(True, 10.0)),
    (["handling=lenient", "wait=3"], Preferences(False, 3.0)),
    (["wait=soon", "return=minimal"], Preferences()),  # malformed or unknown: ignored
])
def test_prefer_is_read_as_rfc_7240_says(headers: list[str], expected: Preferences) -> None:
    assert parse_prefer(headers) == expected


def test_the_mode_and_the_wait() -> None:
    assert choose_mode(Preferences(True), "text/event-stream") is Mode.ASYNC
    assert choose_mode(Preferences(), "application/json, text/event-stream;q=0.9") \
        is Mode.STREAM
    assert choose_mode(Preferences(), "*/*") is Mode.SYNC
    assert wait_seconds(None, Preferences(), 60) == 60
    assert wait_seconds(5, Preferences(wait_s=30), 60) == 5
    assert wait_seconds(None, Preferences(wait_s=30), 60) == 30
    assert wait_seconds(600, Preferences(), 60) == 60


@pytest.mark.parametrize("query", ["timeout=soon", "timeout=-1", "timeout=nan",
                                   "id=bad%20id"])
def test_a_bad_query_is_422_naming_it(gw: Gateway, query: str) -> None:
    gw.connect(FakePool())
    response = gw.client.post(f"/v1/run/docs?{query}", content=b"{}")
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert query.split("=")[0] in response.json()["detail"]


def test_a_body_that_is_not_json_is_422(gw: Gateway) -> None:
    gw.connect(FakePool())
    response = gw.client.post("/v1/run/docs", content=b"{nope")
    assert response.status_code == 422
    assert "must be JSON" in response.json()["detail"]
