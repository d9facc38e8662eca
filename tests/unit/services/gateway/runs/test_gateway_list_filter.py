"""``GET /v1/workflows``'s filters (``listing.list_filter``): a definition by name or
``name@version``, creation times as RFC 3339 instants, ``paused`` true or false; a
malformed value is a 422 that names its parameter. The queries they make run on PostgreSQL in
``tests/e2e/test_definition_pipe.py``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from gateway_harness import FakePool, Gateway, assert_problem

from services.gateway.edge.problems import Problem
from services.gateway.runs.facts import definition_of, paused_view
from services.gateway.runs.listing import (
    ListFilter,
    filter_clauses,
    list_filter,
    paused_filter,
)


def test_no_parameters_filter_nothing() -> None:
    assert list_filter() == ListFilter()


def test_a_definition_by_name_or_by_version() -> None:
    assert list_filter(definition="billing") == ListFilter(definition="billing")
    assert list_filter(definition="billing@3") == ListFilter(definition="billing", version=3)


def test_creation_times_are_instants_to_the_millisecond() -> None:
    f = list_filter(status="running", created_after="2026-01-02T03:04:05.678+01:00",
                    created_before="2026-01-03T00:00:00Z")
    assert f.status == "running"
    assert f.created_after == datetime(2026, 1, 2, 2, 4, 5, 678000, tzinfo=UTC)
    assert f.created_before == datetime(2026, 1, 3, tzinfo=UTC)


@pytest.mark.parametrize(("parameter", "value"), [
    ("created_after", "yesterday"),
    ("created_after", "2026-01-02T03:04:05"),  # no UTC offset: no instant
    ("created_before", "2026-02-30T00:00:00Z"),
    ("created_before", ""),
    ("definition", "billing@x"),
    ("definition", "bill ing"),
    ("definition", "billing@99999999999"),
])
def test_a_malformed_value_is_a_422_naming_its_parameter(parameter: str, value: str) -> None:
    with pytest.raises(Problem) as info:
        list_filter(**{parameter: value})
    assert info.value.status == 422
    assert info.value.extra["errors"][0].startswith(f"query.{parameter}: must be ")


def test_the_definition_view() -> None:
    assert definition_of({"definition": "billing", "definition_version": 2}) == {
        "name": "billing", "version": 2}
    assert definition_of({"definition": None, "definition_version": None}) is None
    assert definition_of({}) is None  # a row read without the columns


@pytest.mark.parametrize(("query", "error"), [
    ("created_after=yesterday", "query.created_after: must be an RFC 3339 date-time"),
    ("created_before=2026-01-01", "query.created_before: must be an RFC 3339 date-time"),
    ("definition=a@b", "query.definition: must be a definition's name"),
    ("status=bogus", "query.status: String should match pattern"),
    ("limit=0", "query.limit: Input should be greater than or equal to 1"),
])
def test_the_route_answers_a_malformed_parameter_with_a_problem(gw: Gateway, query: str,
                                                                error: str) -> None:
    gw.connect(FakePool())
    doc = assert_problem(gw.client.get(f"/v1/workflows?{query}"), 422, "Invalid request")
    assert doc["errors"][0].startswith(error), doc


def test_the_route_takes_every_filter(gw: Gateway) -> None:
    gw.connect(FakePool())
    response = gw.client.get("/v1/workflows", params={
        "definition": "billing@2", "created_after": "2026-01-01T00:00:00Z",
        "created_before": "2026-01-02T00:00:00+02:00", "status": "running", "limit": 5})
    assert response.status_code == 200, response.text
    assert response.json() == {"items": [], "next_cursor": None}
    names = {p["name"] for p in gw.client.get("/openapi.json").json()["paths"][
        "/v1/workflows"]["get"]["parameters"]}
    assert {"definition", "created_after", "created_before", "cursor", "limit"} <= names


def test_paused_is_true_false_or_absent() -> None:
    assert (paused_filter("true"), paused_filter("false"), paused_filter(None)) == (
        True, False, None)


@pytest.mark.parametrize("value", ["yes", "True", "1", "", "false "])
def test_any_other_paused_is_a_422_naming_it(value: str) -> None:
    with pytest.raises(Problem) as info:
        paused_filter(value)
    assert info.value.status == 422
    assert info.value.extra["errors"][0].startswith("query.paused: must be true or false")


def test_paused_runs_are_those_with_a_pause_that_have_not_ended() -> None:
    args: list[object] = []
    paused = filter_clauses(ListFilter(status="running", paused=True), args)
    assert paused[-1] == ("(paused is not null and status not in "
                          "('succeeded', 'failed', 'cancelled'))")
    assert args == ["running"]  # no argument of its own: combined with the others
    others = filter_clauses(ListFilter(paused=False), [])
    assert others[-1] == "(paused is null or status in ('succeeded', 'failed', 'cancelled'))"
    assert filter_clauses(ListFilter(), []) == ["true"]


def test_the_filter_agrees_with_the_document() -> None:
    pause = {"since": 1, "by": "u", "reason": ""}
    assert paused_view(pause, "running") is not None
    assert paused_view(pause, "cancelled") is None  # ended while paused: not paused


def test_the_route_filters_by_paused(gw: Gateway) -> None:
    pool = RecordingPool()
    gw.connect(pool)
    response = gw.client.get("/v1/workflows", params={"paused": "true", "label": "team:a"})
    assert response.status_code == 200, response.text
    sql, args = pool.asked[-1]
    assert "paused is not null and status not in" in sql and "labels @>" in sql
    assert args[0] == {"team": "a"}
    doc = assert_problem(gw.client.get("/v1/workflows?paused=maybe"), 422, "Invalid request")
    assert doc["errors"] == ["query.paused: must be true or false, not 'maybe'"]


class RecordingPool(FakePool):
    """A projection that lists nothing and keeps what it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, tuple[object, ...]]] = []

    async def fetch(self, sql: str, *args: object) -> list[object]:
        self.asked.append((sql, args))
        return []
