"""Producing is bounded, and a claim whose record was never produced is healed.

Before the fix a Kafka stall held the request for the whole stall, and a retry of an
orphaned claim (the gateway died between claim and produce) answered 200 without ever
producing the record, so the workflow never started.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from aiokafka.errors import MessageSizeTooLargeError
from gateway_harness import SPEC, FakePool, FakeProducer, Gateway, assert_problem

from headwater.core import events as ev
from services.gateway.runs.submit import body_hash


@pytest.mark.timeout(20)
def test_a_stalled_kafka_is_503_and_the_claim_stays_for_the_retry(gw: Gateway) -> None:
    """Kafka did not acknowledge: the record may be stored and its run starting, so the
    id stays claimed for this body (a retry of it produces again; another body is 409)."""
    pool = FakePool()
    gw.connect(pool, FakeProducer(stall=True))
    started = time.monotonic()
    response = gw.client.post("/v1/workflows", json={"id": "w1", "workflow": SPEC})
    assert time.monotonic() - started < 5, "bounded by produce_timeout_s (0.3 s here)"
    doc = assert_problem(response, 503, "Kafka unavailable")
    assert response.headers["retry-after"] == "1"
    assert doc["workflow_id"] == "w1"
    assert "0.3 s" in doc["detail"]
    assert pool.rows["w1"]["status"] == "accepted"
    other = gw.client.post("/v1/workflows", json={"id": "w1", "workflow": SPEC,
                                                  "input": {"q": 2}})
    assert_problem(other, 409, "Conflict")
    producer = FakeProducer()
    gw.connect(pool, producer)
    again = gw.client.post("/v1/workflows", json={"id": "w1", "workflow": SPEC})
    assert (again.status_code, again.json()["status"]) == (200, "accepted")
    [(_, key, record)] = producer.sent
    assert key == b"w1" and isinstance(record, ev.WorkflowSubmitted) and record.spec == SPEC


def test_a_record_kafka_refuses_as_too_large_gives_the_id_back(gw: Gateway) -> None:
    class Refusing(FakeProducer):
        async def send_and_wait(self, topic: str, value: bytes, key: bytes,
                                headers: Any = None) -> None:
            raise MessageSizeTooLargeError()

    pool = FakePool()
    gw.connect(pool, Refusing())
    response = gw.client.post("/v1/workflows", json={"id": "w1", "workflow": SPEC})
    assert_problem(response, 413, "Record too large")
    assert pool.rows == {}, "nothing was stored: the id is free"


@pytest.mark.timeout(20)
def test_a_stalled_kafka_bounds_a_cancel_too(gw: Gateway) -> None:
    gw.connect(FakePool(rows={"w1": {"status": "running", "seq": 4}}), FakeProducer(stall=True))
    assert_problem(gw.client.post("/v1/workflows/w1/cancel", json={}), 503, "Kafka unavailable")


def orphan(workflow_input: object, status: str = "accepted", seq: int = 0) -> FakePool:
    """A pool holding the claim of ``w1`` for ``SPEC`` and ``workflow_input``."""
    row = {"status": status, "seq": seq, "spec": SPEC, "input": workflow_input,
           "tenant": None, "body_hash": body_hash(SPEC, workflow_input, None)}
    return FakePool(rows={"w1": row})


def test_retrying_an_orphaned_claim_produces_the_submission(gw: Gateway) -> None:
    producer = FakeProducer()
    gw.connect(orphan({"q": 1}), producer)
    response = gw.client.post("/v1/workflows", json={"id": "w1", "workflow": SPEC,
                                                     "input": {"q": 1}})
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "accepted"
    [(topic, key, record)] = producer.sent
    assert topic.endswith(".submissions") and key == b"w1"
    assert isinstance(record, ev.WorkflowSubmitted)
    assert (record.workflow_id, record.spec, record.input) == ("w1", SPEC, {"q": 1})


def test_a_started_workflow_is_not_produced_again(gw: Gateway) -> None:
    producer = FakeProducer()
    gw.connect(orphan({"q": 1}, status="running", seq=3), producer)
    response = gw.client.post("/v1/workflows", json={"id": "w1", "workflow": SPEC,
                                                     "input": {"q": 1}})
    assert (response.status_code, response.json()["status"]) == (200, "running")
    assert producer.sent == []


def test_an_orphaned_claim_with_another_body_is_still_409(gw: Gateway) -> None:
    producer = FakeProducer()
    gw.connect(orphan({"q": 1}), producer)
    response = gw.client.post("/v1/workflows", json={"id": "w1", "workflow": SPEC,
                                                     "input": {"q": 2}})
    assert_problem(response, 409, "Conflict")
    assert producer.sent == []


@pytest.mark.timeout(20)
def test_retrying_an_orphan_while_kafka_stalls_is_503_and_keeps_the_claim(gw: Gateway) -> None:
    pool = orphan(None)
    gw.connect(pool, FakeProducer(stall=True))
    response = gw.client.post("/v1/workflows", json={"id": "w1", "workflow": SPEC})
    assert_problem(response, 503, "Kafka unavailable")
    assert "w1" in pool.rows, "another request's claim is not ours to release"
