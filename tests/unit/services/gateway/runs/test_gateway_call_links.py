"""``POST /v1/workflows`` with ``parent`` (a task's ``ctx.call``): the link goes into
the submission and the id's claim; a malformed one is 422 naming the field, before the
id is claimed or anything is produced. A ``deadline`` in the spec is checked as the
core reads it."""

from __future__ import annotations

from typing import Any

from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from headwater.core import events as ev

SPEC: dict[str, Any] = {"name": "child", "nodes": [{"id": "a", "task": "t.a"}]}
LINK = {"workflow_id": "wf-p", "node": "fetch", "index": 2, "attempt": 1}


def submit(gw: Gateway, **body: Any) -> Any:
    return gw.client.post("/v1/workflows", json={"workflow": SPEC, "id": "wf-p:fetch.2:call.0",
                                                 **body})


def test_the_link_goes_into_the_submission_and_the_claim(gw: Gateway) -> None:
    pool, producer = FakePool(), FakeProducer()
    gw.connect(pool, producer)
    answer = submit(gw, parent=LINK)
    assert answer.status_code == 202, answer.text
    ((_, key, record),) = producer.sent
    assert isinstance(record, ev.WorkflowSubmitted) and key == b"wf-p:fetch.2:call.0"
    assert record.parent == LINK
    row = pool.rows["wf-p:fetch.2:call.0"]
    assert (row["parent_id"], row["parent_node"], row["parent_index"],
            row["parent_attempt"]) == ("wf-p", "fetch", 2, 1)


def test_a_retry_with_another_attempts_link_is_the_same_run(gw: Gateway) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(), producer)
    assert submit(gw, parent=LINK).status_code == 202
    again = submit(gw, parent={**LINK, "attempt": 2})
    assert again.status_code == 200, again.text
    assert all(r.parent == LINK for _, _, r in producer.sent)  # the first link stands


def test_a_run_of_its_own_has_no_link(gw: Gateway) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(), producer)
    assert submit(gw).status_code == 202
    assert producer.sent[0][2].parent is None


def test_a_malformed_link_is_refused_naming_parent(gw: Gateway) -> None:
    pool, producer = FakePool(), FakeProducer()
    gw.connect(pool, producer)
    for bad in ({**LINK, "attempt": 0}, {**LINK, "node": ""}, {"workflow_id": "wf-p"},
                {**LINK, "via": "call"}, {**LINK, "index": 2**40}):  # its schema takes no other
        doc = assert_problem(submit(gw, parent=bad), 422)
        assert any(e.startswith("parent") for e in doc.get("errors", [])), doc
    assert pool.rows == {} and producer.sent == []


def test_a_bad_deadline_is_refused_and_a_good_one_accepted(gw: Gateway) -> None:
    gw.connect(FakePool())
    doc = assert_problem(gw.client.post("/v1/workflows", json={
        "workflow": {**SPEC, "deadline": "tomorrow"}}), 422)
    assert any("deadline:" in e for e in doc["errors"]), doc
    ok = gw.client.post("/v1/workflows", json={"workflow": {**SPEC, "deadline": "15m"}})
    assert ok.status_code == 202, ok.text
