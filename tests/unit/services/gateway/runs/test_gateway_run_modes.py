"""How ``POST /v1/run/{name}`` reads its request (``services.gateway.runs.modes``): the
RFC 7240 ``Prefer`` header, ``Accept``, and the wait's cap; and its answers to a bad
``timeout`` or body, before anything is submitted."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from services.gateway.edge.problems import Problem
from services.gateway.runs import run as run_api
from services.gateway.runs.models import SubmitRequest
from services.gateway.runs.modes import (
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
    assert choose_mode(Preferences(), "application/json;q=0.9, text/event-stream") \
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


@pytest.mark.parametrize(("body", "path"), [
    (b"12345678901234567890123", "input: integer outside the signed 64-bit range"),
    (b'{"a": [1, -99999999999999999999]}', "input.a[1]: integer outside"),
    (b'{"a": "x\\u0000"}', "input.a: contains U+0000"),
])
def test_an_input_postgresql_or_kafka_cannot_hold_is_422_naming_it(
        gw: Gateway, body: bytes, path: str) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(), producer)
    doc = assert_problem(gw.client.post("/v1/run/docs", content=body), 422)
    assert any(e.startswith(path) for e in doc["errors"]), doc
    assert producer.sent == []


@pytest.mark.parametrize(("accept", "mode"), [
    ("text/event-stream;q=0", Mode.SYNC),
    ("text/event-stream; q=0.0", Mode.SYNC),
    ("application/json, text/event-stream;q=0.1", Mode.SYNC),
    ("application/json;q=0.5, text/event-stream", Mode.STREAM),
    ("text/event-stream;q=0.5, application/json;q=0.2", Mode.STREAM),
    ("*/*;q=0.9, text/event-stream", Mode.STREAM),
    ("text/*", Mode.SYNC),
    ("text/event-stream;q=bogus", Mode.STREAM),  # a malformed weight counts as 1
    ("", Mode.SYNC),
])
def test_accept_weights_are_read_as_rfc_9110_says(accept: str, mode: Mode) -> None:
    assert choose_mode(Preferences(), accept) is mode


def test_a_run_without_a_name_is_a_problem_naming_it(gw: Gateway) -> None:
    gw.connect(FakePool())
    for method, path in [("POST", "/v1/run/"), ("PUT", "/v1/definitions/"),
                         ("DELETE", "/v1/definitions/")]:
        response = gw.client.request(method, path, content=b"{}", follow_redirects=False)
        doc = assert_problem(response, 422)
        assert "name" in doc["detail"], doc


@pytest.mark.parametrize(("query", "expected"), [("", False), ("?queue_anyway=true", True),
                                                 ("?queue_anyway=false", False)])
def test_queue_anyway_reaches_the_submission(gw: Gateway, monkeypatch: pytest.MonkeyPatch,
                                             query: str, expected: bool) -> None:
    seen: list[SubmitRequest] = []

    async def refuse(pool: Any, out: Any, request: SubmitRequest, me: Any,
                     body_bytes: int | None = None) -> Any:
        seen.append(request)
        raise Problem(400, "No live worker", "stop here")

    monkeypatch.setattr(run_api, "submit", refuse)
    gw.connect(FakePool())
    assert_problem(gw.client.post(f"/v1/run/docs{query}", content=b"{}"), 400)
    assert [r.queue_anyway for r in seen] == [expected]
    assert_problem(gw.client.post("/v1/run/docs?queue_anyway=maybe", content=b"{}"), 422)
