"""``POST /v1/workflows/{id}/pause`` and ``/resume``: 202 once the request is produced
to ``control`` keyed by the run's id; 404 unknown, 409 ended, 422 a malformed body or a
limiter's id; the run document and the list show ``paused``."""

from __future__ import annotations

import re
from typing import Any

import pytest
from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from headwater.core import events as ev
from headwater.core.status import WorkflowStatus

WF = "wf-pause-1"
SPEC: dict[str, Any] = {"name": "two", "nodes": [{"id": "a", "task": "t.a"}]}
HEX32 = re.compile(r"[0-9a-f]{32}")


def connected(gw: Gateway, status: str = WorkflowStatus.RUNNING,
              paused: Any = None) -> FakeProducer:
    producer = FakeProducer()
    gw.connect(FakePool(rows={WF: {"status": status, "seq": 3, "spec": SPEC, "input": None,
                                   "tenant": None, "paused": paused}}), producer)
    return producer


@pytest.mark.parametrize("verb", ["pause", "resume"])
def test_a_request_is_produced_to_control_and_answered_202(gw: Gateway, verb: str) -> None:
    producer = connected(gw)
    response = gw.client.post(f"/v1/workflows/{WF}/{verb}")
    assert response.status_code == 202, response.text
    doc = response.json()
    assert HEX32.fullmatch(doc["request_id"]), "a missing request_id is a random uuid4 hex"
    assert doc["status"] == f"{verb}_requested" and doc["was_paused"] is False
    [(topic, key, record)] = producer.sent
    assert (topic, key) == (gw.hw.settings.topics.control, WF.encode())
    want = ev.PauseRequested if verb == "pause" else ev.ResumeRequested
    assert type(record) is want and record.request_id == doc["request_id"]


def test_the_senders_reason_and_request_id_are_kept(gw: Gateway) -> None:
    producer = connected(gw, paused={"since": 1, "by": "bob", "reason": ""})
    response = gw.client.post(f"/v1/workflows/{WF}/pause",
                              json={"reason": "model API down", "request_id": "ops-1"})
    assert response.status_code == 202, response.text
    assert response.json()["was_paused"] is True
    [(_, _, record)] = producer.sent
    assert record == ev.PauseRequested(WF, record.at_ms, "ops-1", "anonymous", "model API down")


def test_an_unknown_run_is_404_and_an_ended_one_409(gw: Gateway) -> None:
    producer = connected(gw, WorkflowStatus.SUCCEEDED)
    doc = assert_problem(gw.client.post("/v1/workflows/nope/pause"), 404)
    assert "nope" in doc["detail"]
    doc = assert_problem(gw.client.post(f"/v1/workflows/{WF}/resume"), 409)
    assert "has already ended (succeeded) and cannot be resumed" in doc["detail"], doc
    assert producer.sent == []


@pytest.mark.parametrize("body", [{"color": "red"}, {"reason": 3},
                                  {"request_id": ""}, {"reason": "x" * 1001}])
def test_a_malformed_body_is_422(gw: Gateway, body: dict[str, Any]) -> None:
    producer = connected(gw)
    assert_problem(gw.client.post(f"/v1/workflows/{WF}/pause", json=body), 422)
    assert producer.sent == []


def test_a_limiter_cannot_be_paused(gw: Gateway) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(rows={}), producer)
    doc = assert_problem(gw.client.post("/v1/workflows/limit::concurrency:acme/pause"), 422)
    assert "cannot be paused" in doc["detail"], doc
    assert producer.sent == []


@pytest.mark.parametrize("body", [{"reason": "why"}, {"reason": ""}, {"request_id": ""}])
def test_a_resume_takes_only_a_request_id(gw: Gateway, body: dict[str, Any]) -> None:
    """A resume records no reason: one sent is a 422 naming it, not dropped unseen."""
    producer = connected(gw, paused={"since": 1, "by": "bob", "reason": ""})
    doc = assert_problem(gw.client.post(f"/v1/workflows/{WF}/resume", json=body), 422)
    assert next(iter(body)) in doc["detail"], doc
    assert producer.sent == []
    response = gw.client.post(f"/v1/workflows/{WF}/resume", json={"request_id": "ops-2"})
    assert response.status_code == 202, response.text
    [(_, _, record)] = producer.sent
    assert record == ev.ResumeRequested(WF, record.at_ms, "ops-2", "anonymous")
