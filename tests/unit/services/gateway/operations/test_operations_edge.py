"""``POST /v1/operations`` at the edge: an unknown action, a missing argument, an empty
or malformed filter are 422s naming the fault; a dry run records nothing; an unknown
operation is a 404; the filter is scoped to the caller's tenant (``_filter``)."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from services.common.auth.tokens import OPEN, Principal
from services.gateway.edge.problems import Problem
from services.gateway.operations.api import _filter
from services.gateway.operations.models import OperationFilter

LABELLED = {"label": ["team:a"]}


@pytest.mark.parametrize(("body", "error"), [
    ({"action": "explode", "filter": LABELLED}, "action: 'explode' is not one of cancel, "
                                                "signal, rerun"),
    ({"action": "signal", "filter": LABELLED}, "signal: required by a bulk signal"),
    ({"action": "cancel", "filter": {}}, "filter: give at least one of status, name"),
    ({"action": "cancel", "filter": {"tenant": "acme"}}, "filter: give at least one of"),
    ({"action": "cancel", "filter": {"label": ["bad key:x"]}},
     "filter.label: must be key:value or key"),
    ({"action": "cancel", "filter": {"definition": "a@b"}}, "filter.definition: must be"),
    ({"action": "cancel", "filter": {"status": "bogus"}}, "filter.status: Input should be"),
    ({"action": "cancel", "filter": {"name": ""}}, "filter.name: String should have"),
    ({"action": "cancel", "filter": {"colour": "red"}}, "filter.colour: Extra inputs"),
    ({"action": "cancel"}, "filter: Field required"),
])
def test_a_bad_request_is_a_422_naming_its_fault(gw: Gateway, body: dict[str, Any],
                                                 error: str) -> None:
    gw.connect(FakePool())
    doc = assert_problem(gw.client.post("/v1/operations", json=body), 422)
    assert any(e.startswith(error) for e in doc["errors"]), doc


def test_a_dry_run_counts_and_records_nothing(gw: Gateway) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(), producer)
    response = gw.client.post("/v1/operations", json={
        "action": "cancel", "filter": {"label": ["team:a"], "status": "running"},
        "dry_run": True})
    assert response.status_code == 200, response.text
    assert response.json() == {"dry_run": True, "action": "cancel", "matched": 0,
                               "over_limit": False, "sample": [],
                               "filter": {"label": ["team:a"], "status": "running"},
                               "by_status": {}, "to_act_on": 0}
    assert producer.sent == []


def test_an_unknown_operation_is_a_404(gw: Gateway) -> None:
    gw.connect(FakePool())
    assert_problem(gw.client.get("/v1/operations/op-nope"), 404, "Not found")


def test_the_filter_is_the_callers_tenants() -> None:
    given = OperationFilter(label=["team:a"])
    filters, empty = _filter(given, Principal("acme", "submit", "k1"))
    assert filters.tenant == "acme" and filters.labels == (("team", "a"),) and not empty
    _, empty = _filter(OperationFilter(label=["team:a"], tenant="other"),
                       Principal("acme", "submit", "k1"))
    assert empty  # another tenant's runs: none to act on
    filters, _ = _filter(OperationFilter(status="failed", tenant="other"), OPEN)
    assert filters.tenant == "other" and filters.status == "failed"
    with pytest.raises(Problem):
        _filter(OperationFilter(), OPEN)


def test_paused_is_a_filter_of_its_own_false_included() -> None:
    filters, _ = _filter(OperationFilter(paused=False), OPEN)
    assert filters.paused is False
    filters, _ = _filter(OperationFilter(paused=True, label=["team:a"]), OPEN)
    assert (filters.paused, filters.labels) == (True, (("team", "a"),))
    assert OperationFilter(paused=False).given() == {"paused": False}


def test_a_dry_run_of_the_paused_runs_shows_the_filter(gw: Gateway) -> None:
    gw.connect(FakePool())
    response = gw.client.post("/v1/operations", json={
        "action": "resume", "filter": {"paused": True}, "dry_run": True})
    assert response.status_code == 200, response.text
    assert response.json()["filter"] == {"paused": True}
    doc = assert_problem(gw.client.post("/v1/operations", json={
        "action": "resume", "filter": {"paused": "yes"}, "dry_run": True}), 422)
    assert any(e.startswith("filter.paused: Input should be a valid boolean")
               for e in doc["errors"]), doc
