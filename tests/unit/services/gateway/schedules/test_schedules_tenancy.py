"""Schedules are scoped by tenant: a tenant's principal puts its schedule as a workflow of
its tenant, sees and writes only its tenant's (another tenant's is 404 as an unknown
name; a ``PUT`` of a name another tenant's live schedule holds is 409), and its
schedule's definition must be one it sees. A principal of every tenant writes any
schedule, leaving a tenant's that tenant's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_harness import assert_problem
from tenant_harness import SPEC, Tenants, tenants

from headwater.core import events as ev

BODY: dict[str, Any] = {"cron": "* * * * * */2", "definition": "billing"}


@pytest.fixture
def t(tmp_path: Path) -> Iterator[Tenants]:
    with tenants(tmp_path) as found:
        for who, name in (("A", "billing"), ("*", "common")):
            answer = found.call(who, "PUT", f"/v1/definitions/{name}", json={"workflow": SPEC})
            assert answer.status_code == 201, answer.text
        yield found


def _submitted(t: Tenants) -> list[ev.WorkflowSubmitted]:
    return [r for _, _, r in t.producer.sent if isinstance(r, ev.WorkflowSubmitted)]


def _put(t: Tenants, who: str, name: str, body: dict[str, Any] = BODY) -> Any:
    return t.call(who, "PUT", f"/v1/schedules/{name}", json=body)


def test_a_tenants_schedule_is_a_workflow_of_its_tenant(t: Tenants) -> None:
    assert _put(t, "A", "nightly").status_code == 201
    [record] = _submitted(t)
    assert (record.workflow_id, record.tenant) == ("schedule:nightly:1", "A")
    assert t.call("A", "GET", "/v1/schedules/nightly").json()["generation"] == 1
    assert _put(t, "A", "nightly").status_code == 200  # the same settings


@pytest.mark.parametrize(("method", "path"), [
    ("GET", ""), ("DELETE", ""), ("POST", "/pause"), ("POST", "/resume")])
def test_another_tenants_schedule_is_not_found_like_an_unknown_one(t: Tenants, method: str,
                                                                   path: str) -> None:
    _put(t, "A", "nightly")
    hidden = assert_problem(t.call("B", method, f"/v1/schedules/nightly{path}"), 404,
                            "Not found")
    unknown = assert_problem(t.call("B", method, f"/v1/schedules/nosuch{path}"), 404)
    assert hidden == {k: v.replace("nosuch", "nightly") if isinstance(v, str) else v
                      for k, v in unknown.items()}
    assert len(_submitted(t)) == 1
    assert not [r for _, _, r in t.producer.sent if isinstance(r, ev.CancelRequested
                                                                  | ev.SignalSent)]


def test_a_name_another_tenants_live_schedule_holds_is_409(t: Tenants) -> None:
    _put(t, "A", "nightly")
    doc = assert_problem(_put(t, "B", "nightly", {**BODY, "definition": "common"}), 409,
                         "Conflict")
    assert "taken" in doc["detail"] and "A" not in doc["detail"], doc  # not whose
    assert set(doc) == {"type", "title", "status", "detail", "instance", "schedule"}, doc
    assert [r.workflow_id for r in _submitted(t)] == ["schedule:nightly:1"]


def test_a_schedules_definition_must_be_one_the_tenant_sees(t: Tenants) -> None:
    doc = assert_problem(_put(t, "B", "nightly"), 422, "Invalid schedule")
    assert doc["errors"] == ["definition: no definition billing"], doc
    assert _put(t, "B", "nightly", {**BODY, "definition": "common"}).status_code == 201
    assert [(r.tenant, r.workflow_id) for r in _submitted(t)] == [("B", "schedule:nightly:1")]


def test_every_tenant_replacing_a_tenants_schedule_leaves_it_that_tenants(t: Tenants) -> None:
    _put(t, "A", "nightly")
    assert _put(t, "*", "nightly", {**BODY, "cron": "0 * * * *"}).status_code == 201
    assert [(r.workflow_id, r.tenant) for r in _submitted(t)] == [
        ("schedule:nightly:1", "A"), ("schedule:nightly:2", "A")]
    assert _put(t, "*", "hourly", {**BODY, "cron": "0 * * * *"}).status_code == 201
    assert _submitted(t)[-1].tenant is None  # a new one of every tenant's has no tenant
    assert t.call("A", "GET", "/v1/schedules/hourly").status_code == 404


def test_a_tenant_deletes_its_own_schedule(t: Tenants) -> None:
    _put(t, "A", "nightly")
    assert t.call("A", "DELETE", "/v1/schedules/nightly").status_code == 204
    cancels = [r.workflow_id for _, _, r in t.producer.sent if isinstance(r, ev.CancelRequested)]
    assert cancels == ["schedule:nightly:1"]
