"""A limiter (a run whose id starts with ``limit::``) can be neither cancelled nor
signalled: the coordinator dead-letters both, so the gateway answers 422 naming why
instead of a 202 that promises what never happens (docs/architecture.md §4n)."""

from __future__ import annotations

from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from headwater.core.status import WorkflowStatus

LIMITER = "limit::concurrency:acme"
SPEC = {"name": "limiter", "nodes": [{"id": "limiter", "kind": "limiter"}]}


def connected(gw: Gateway) -> FakeProducer:
    """Connect ``gw`` to a projection holding a running limiter; return its producer."""
    producer = FakeProducer()
    gw.connect(FakePool(rows={LIMITER: {"status": WorkflowStatus.RUNNING, "seq": 4,
                                        "spec": SPEC, "input": None, "tenant": None}}),
               producer)
    return producer


def test_a_limiter_cannot_be_cancelled(gw: Gateway) -> None:
    producer = connected(gw)
    doc = assert_problem(gw.client.post(f"/v1/workflows/{LIMITER}/cancel", json={}), 422)
    assert "is a limiter" in doc["detail"] and "cannot be cancelled" in doc["detail"], doc
    assert producer.sent == []


def test_a_limiter_cannot_be_signalled(gw: Gateway) -> None:
    producer = connected(gw)
    response = gw.client.post(f"/v1/workflows/{LIMITER}/signals/go", json={"fields": {}})
    doc = assert_problem(response, 422)
    assert "cannot be signalled" in doc["detail"], doc
    assert producer.sent == []

