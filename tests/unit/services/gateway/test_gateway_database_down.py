"""PostgreSQL down: every route answers 503 with ``Retry-After``, and so does /ready.

Before the fix the routes answered a bare 500 and /ready stayed 200.
"""

from __future__ import annotations

import time

import asyncpg
import pytest
from gateway_harness import SPEC, UNREACHABLE, FakePool, Gateway, assert_problem

REQUESTS = [
    ("GET", "/v1/workflows/w1", None),
    ("GET", "/v1/workflows", None),
    ("GET", "/v1/workflows/w1/events", None),
    ("POST", "/v1/workflows", {"workflow": SPEC}),
    ("POST", "/v1/workflows/w1/cancel", {}),
]


async def dead_pool() -> asyncpg.Pool:
    """A real pool whose every connection attempt is refused (port 9)."""
    return await asyncpg.create_pool(UNREACHABLE.pg_dsn, min_size=0, max_size=2)


def test_a_refused_database_is_503_everywhere(gw: Gateway) -> None:
    assert gw.client.portal is not None
    gw.connect(gw.client.portal.call(dead_pool))
    for method, url, body in REQUESTS:
        response = gw.client.request(method, url, json=body)
        assert_problem(response, 503, "Database unavailable")
        assert response.headers["retry-after"] == "1"
    ready = gw.client.get("/ready")
    assert_problem(ready, 503, "Not ready")
    assert ready.headers["retry-after"] == "1"
    assert gw.client.get("/health").status_code == 200


@pytest.mark.parametrize("error", [
    ConnectionResetError(104, "Connection reset by peer"),
    asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle"),
    asyncpg.exceptions.AdminShutdownError("terminating connection due to administrator"),
    asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
    asyncpg.exceptions.TooManyConnectionsError("sorry, too many clients already"),
    asyncpg.InterfaceError("pool is closing"),
])
def test_a_lost_database_is_503(gw: Gateway, error: Exception) -> None:
    gw.connect(FakePool(fail=error))
    for method, url, body in REQUESTS:
        response = gw.client.request(method, url, json=body)
        assert_problem(response, 503, "Database unavailable")
    assert_problem(gw.client.get("/ready"), 503, "Not ready")


def test_ready_is_503_when_the_database_hangs(gw: Gateway) -> None:
    gw.connect(FakePool(stall=True))
    started = time.monotonic()
    assert_problem(gw.client.get("/ready"), 503, "Not ready")
    assert time.monotonic() - started < 2, "bounded by ready_timeout_s (0.3 s here)"


def test_ready_is_200_when_the_database_answers(gw: Gateway) -> None:
    gw.connect(FakePool())
    assert gw.client.get("/ready").json() == {"status": "ready"}


def test_an_unexpected_error_is_a_500_problem_not_a_crash(gw: Gateway) -> None:
    gw.connect(FakePool(fail=RuntimeError("a bug")))
    doc = assert_problem(gw.client.get("/v1/workflows/w1"), 500, "Internal error")
    assert "a bug" not in doc.get("detail", "")
    gw.hw.pool = FakePool()
    assert gw.client.get("/ready").status_code == 200, "the app goes on serving"
