"""A retry is recognised by the hash of the request as it came (``request_hash``), read
once and before the request is resolved: the definitions and workers it was resolved
and placed with may have changed since.

Before the fix a retry was compared with the hash of the body accepted, re-derived from
the request: an inline spec whose child names a definition was resolved again, so a
retry after that definition's new version was 409 and after its deletion (or, here,
with no such definition at all) 422, though it was the same request.
"""

from __future__ import annotations

from typing import Any

from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from headwater.core.idempotency import body_hash

CALLER: dict[str, Any] = {"name": "caller", "nodes": [
    {"id": "c", "kind": "workflow", "definition": "child"}]}
"""A spec whose child names a definition (FakePool knows of none)."""
INLINED: dict[str, Any] = {"name": "caller", "nodes": [
    {"id": "c", "kind": "workflow", "definition": "child", "definition_version": 1,
     "workflow": {"name": "child", "nodes": [{"id": "a", "task": "t.a", "queue": "gpu"}]}}]}
"""What it ran as: the child inlined and placed."""


def accepted_row(request_hash: str | None, **extra: Any) -> dict[str, Any]:
    """The row of a run accepted and started: ``body_hash`` is the projector's."""
    return {"status": "running", "seq": 3, "spec": INLINED, "input": {"q": 1},
            "tenant": None, "body_hash": body_hash(INLINED, {"q": 1}, None),
            "request_hash": request_hash, **extra}


def test_a_retry_of_a_spec_naming_a_definition_is_the_same_run(gw: Gateway) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(rows={"w1": accepted_row(body_hash(CALLER, {"q": 1}, None))}),
               producer)
    body = {"id": "w1", "workflow": CALLER, "input": {"q": 1}}
    response = gw.client.post("/v1/workflows", json=body)
    assert (response.status_code, response.json()["status"]) == (200, "running"), \
        response.text
    other = gw.client.post("/v1/workflows", json={**body, "input": {"q": 2}})
    assert "different submission" in assert_problem(other, 409, "Conflict")["detail"]
    assert producer.sent == []


def test_a_retry_by_name_is_the_same_run_whatever_the_registry_holds(gw: Gateway) -> None:
    digest = body_hash({"definition": "child"}, {"q": 1}, None)
    gw.connect(FakePool(rows={"w1": accepted_row(digest, definition="child",
                                                 definition_version=1)}))
    body = {"id": "w1", "definition": "child", "input": {"q": 1}}
    assert gw.client.post("/v1/workflows", json=body).status_code == 200
    # Another reference is another request, even to the version that runs (it was the
    # same run once accepted, and 409 before: the answer changed with the timing).
    assert_problem(gw.client.post("/v1/workflows", json={**body, "definition": "child@1"}),
                   409, "Conflict")
    # A new id is resolved: FakePool knows no definition.
    assert_problem(gw.client.post("/v1/workflows", json={**body, "id": "w2"}), 404)


def test_without_a_request_hash_the_body_that_runs_is_compared(gw: Gateway) -> None:
    """A run submitted straight on Kafka, or whose claim lost the id to one."""
    plain = {"name": "plain", "nodes": [{"id": "a", "task": "t.a"}]}
    gw.connect(FakePool(rows={"w1": accepted_row(None, spec=plain,
                                                 body_hash=body_hash(plain, {"q": 1}, None))}))
    same = gw.client.post("/v1/workflows", json={"id": "w1", "workflow": plain,
                                                 "input": {"q": 1}})
    assert same.status_code == 200, same.text
    lost = gw.client.post("/v1/workflows", json={"id": "w1", "workflow": CALLER,
                                                 "input": {"q": 1}})
    assert_problem(lost, 409, "Conflict")


def test_an_invalid_body_under_a_taken_id_is_409_before_it_is_checked(gw: Gateway) -> None:
    gw.connect(FakePool(rows={"w1": accepted_row(body_hash(CALLER, {"q": 1}, None))}))
    broken = {"name": "caller", "nodes": [{"id": "a"}]}  # no task
    assert_problem(gw.client.post("/v1/workflows", json={"id": "w1", "workflow": broken}),
                   409, "Conflict")
    assert_problem(gw.client.post("/v1/workflows", json={"id": "w2", "workflow": broken}),
                   422, "Invalid workflow spec")
