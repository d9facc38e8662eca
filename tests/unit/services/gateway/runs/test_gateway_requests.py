"""U+0000 in the path or query, a forged cursor and a bad ``Last-Event-ID`` are 400.

Before the fix they reached PostgreSQL (NUL in text, a date out of range: 500) or
``int()`` (``Last-Event-ID: ²``: 500), or overflowed a bigint inside the stream.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import orjson
import pytest
from gateway_harness import FakePool, Gateway, assert_problem

from services.gateway.edge.problems import Problem
from services.gateway.runs.cursor import decode_cursor, encode_cursor


def forged(doc: object) -> str:
    """A cursor encoding ``doc`` the way ``encode_cursor`` does."""
    return base64.urlsafe_b64encode(orjson.dumps(doc)).decode()


@pytest.mark.parametrize(("method", "url", "where"), [
    ("GET", "/v1/workflows/a%00b", "path"),
    ("GET", "/v1/workflows/a%00b/events", "path"),
    ("POST", "/v1/workflows/a%00b/cancel", "path"),
    ("GET", "/v1/workflows?name=a%00", "query"),
    ("GET", "/v1/workflows?tenant=a%00", "query"),
    ("GET", "/v1/workflows?status=running&cursor=%00", "query"),
    ("GET", "/health?x=%00", "query"),
])
def test_nul_in_path_or_query_is_400(gw: Gateway, method: str, url: str, where: str) -> None:
    gw.connect(FakePool(rows={"a\x00b": {"status": "running", "seq": 1}}))
    doc = assert_problem(gw.client.request(method, url), 400, "Bad request")
    assert doc["detail"] == f"the {where} contains U+0000 (%00)"


def test_nul_is_rejected_even_before_the_gateway_is_ready(gw: Gateway) -> None:
    assert_problem(gw.client.get("/v1/workflows/a%00b"), 400)
    assert_problem(gw.client.get("/v1/workflows/ab"), 503, "Not ready")


@pytest.mark.parametrize("cursor", [
    forged(["2024-01-01T00:00:00+00:00", "a\x00b"]),
    forged(["0001-01-01T00:00:00+23:59", "x"]),  # before year 1 in UTC
    forged(["9999-12-31T23:59:59-23:59", "x"]),  # after year 9999 in UTC
    forged(["2024-01-01T00:00:00", "x"]),  # no time zone
    forged(["not a date", "x"]),
    forged(["2024-01-01T00:00:00+00:00", "x", "extra"]),
    forged(["2024-01-01T00:00:00+00:00", 7]),
    forged({"created": "2024-01-01T00:00:00+00:00"}),
    forged(["2024-01-01T00:00:00+00:00", "-starts-with-a-dash"]),
    base64.urlsafe_b64encode(b"\xff\xfe not json").decode(),
    "not base64!",
    "é",
    "A" * 2000,
])
def test_a_cursor_this_api_did_not_return_is_400(gw: Gateway, cursor: str) -> None:
    gw.connect(FakePool())
    response = gw.client.get("/v1/workflows", params={"cursor": cursor})
    assert_problem(response, 400, "Bad cursor")


def test_a_returned_cursor_decodes_to_utc() -> None:
    created = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    assert decode_cursor(encode_cursor(created, "wf-1")) == (created, "wf-1")
    plus_two = forged(["2024-05-06T09:08:09.123456+02:00", "wf-1"])
    assert decode_cursor(plus_two) == (created, "wf-1")
    with pytest.raises(Problem):
        decode_cursor(forged(["0001-01-01T00:00:00+23:59", "x"]))


def test_a_valid_cursor_is_200(gw: Gateway) -> None:
    gw.connect(FakePool())
    cursor = encode_cursor(datetime(2024, 1, 1, tzinfo=UTC), "wf-1")
    response = gw.client.get("/v1/workflows", params={"cursor": cursor, "name": "n"})
    assert response.status_code == 200, response.text
    assert response.json() == {"items": [], "next_cursor": None}


@pytest.mark.parametrize("value", [
    "²".encode("latin-1"), b"99999999999999999999", b"1234567890123456789", b"-1", b"1.5",
    b"0x10", b"1 2", b"abc",
])
def test_a_bad_last_event_id_is_400(gw: Gateway, value: bytes) -> None:
    gw.connect(FakePool(rows={"w": {"status": "succeeded", "seq": 3}}))
    response = gw.client.get("/v1/workflows/w/events", headers={"Last-Event-ID": value})
    doc = assert_problem(response, 400, "Bad Last-Event-ID")
    assert "1 to 18 digits" in doc["detail"]


@pytest.mark.parametrize("value", [b"3", b"999999999999999999", b"0003"])
def test_a_good_last_event_id_streams(gw: Gateway, value: bytes) -> None:
    # The workflow finished at seq 3 and has no later events: the stream ends at once.
    gw.connect(FakePool(rows={"w": {"status": "succeeded", "seq": 3}}))
    response = gw.client.get("/v1/workflows/w/events", headers={"Last-Event-ID": value})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
