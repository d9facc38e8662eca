"""Labels at the edge: a submission's ``labels`` (a body's, or ``?label=k:v`` of
``POST /v1/run/{name}``) merged over the spec's in the spec the run records and in what
its id's hash covers; a bad one a 422 naming it; ``?label=`` selectors of the listing
and the SQL they make (run on PostgreSQL in ``tests/e2e/test_labels.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from services.gateway.edge.problems import Problem
from services.gateway.runs.listing import label_clauses, label_selectors
from services.gateway.runs.models import SubmitRequest
from services.gateway.runs.run import run_labels
from services.gateway.runs.submit import _given

SPEC: dict[str, Any] = {"name": "w", "nodes": [{"id": "a", "task": "t.a"}],
                        "labels": {"team": "a", "env": "prod"}}


def test_a_submissions_labels_are_set_in_the_spec_over_its_own() -> None:
    request = SubmitRequest(workflow=SPEC, labels={"team": "b"})
    assert _given(request).doc["labels"] == {"team": "b", "env": "prod"}
    by_name = SubmitRequest(definition="d", labels={"team": "b"}, priority=8)
    assert _given(by_name).doc == {"definition": "d", "priority": 8, "labels": {"team": "b"}}
    assert _given(SubmitRequest(workflow=SPEC)).doc == SPEC  # none given: hashed as before


def test_the_run_is_recorded_with_its_labels(gw: Gateway) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(), producer)
    response = gw.client.post("/v1/workflows", json={
        "id": "r1", "workflow": SPEC, "labels": {"env": "dev", "run": "7"},
        "queue_anyway": True})
    assert response.status_code == 202, response.text
    (_, _, record), = producer.sent
    assert record.spec["labels"] == {"team": "a", "env": "dev", "run": "7"}


@pytest.mark.parametrize(("labels", "error"), [
    ({"bad key": "x"}, "labels: key 'bad key' must be 1 to 63 of"),
    ({"team": "a b"}, "labels: team: value 'a b' must be a string of"),
    ({"team": 3}, "labels.team: Input should be a valid string"),
])
def test_a_bad_label_is_a_422_naming_it(gw: Gateway, labels: Any, error: str) -> None:
    gw.connect(FakePool())
    doc = assert_problem(gw.client.post("/v1/workflows", json={
        "workflow": SPEC, "labels": labels, "queue_anyway": True}), 422)
    assert any(e.startswith(error) for e in doc["errors"]), doc


def test_a_run_by_name_takes_labels_from_its_query() -> None:
    assert run_labels(["team:a", "env:", "ref:a:b"]) == {"team": "a", "env": "", "ref": "a:b"}
    assert run_labels([]) is None
    with pytest.raises(Problem) as info:
        run_labels(["team"])
    assert info.value.extra["errors"] == ["query.label: must be key:value, not 'team'"]


def test_the_listings_label_selectors_and_their_sql() -> None:
    selectors = label_selectors(["team:a", "env", "run:7", "env"])
    assert selectors == (("team", "a"), ("env", None), ("run", "7"), ("env", None))
    args: list[object] = ["running"]
    assert label_clauses(selectors, args) == ["labels @> $2::jsonb", "labels ? $3"]
    assert args == ["running", {"team": "a", "run": "7"}, "env"]
    assert label_clauses((), args) == []


@pytest.mark.parametrize(("query", "error"), [
    ("label=bad key:x", "query.label: must be key:value or key"),
    ("label=team:a b", "query.label: must be key:value or key"),
    ("&".join(f"label=k{i}:v" for i in range(33)), "query.label: must be given at most 32"),
])
def test_a_malformed_selector_is_a_422(gw: Gateway, query: str, error: str) -> None:
    gw.connect(FakePool())
    doc = assert_problem(gw.client.get(f"/v1/workflows?{query}"), 422, "Invalid request")
    assert doc["errors"][0].startswith(error), doc


def test_the_route_takes_label_selectors(gw: Gateway) -> None:
    gw.connect(FakePool())
    response = gw.client.get("/v1/workflows", params=[("label", "team:a"), ("label", "env")])
    assert response.status_code == 200, response.text
    names = {p["name"] for p in gw.client.get("/openapi.json").json()["paths"][
        "/v1/workflows"]["get"]["parameters"]}
    assert "label" in names
