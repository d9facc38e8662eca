"""``POST /v1/workflows``: an inline spec whose ``${input...}`` the submitted input cannot
resolve is refused (422, naming each reference and what the input has), before the id is
claimed or anything is produced."""

from __future__ import annotations

from typing import Any

from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from services.gateway.definitions.registry import MAX_INPUT_ERRORS

SPEC: dict[str, Any] = {"name": "orders", "nodes": [
    {"id": "fetch", "task": "t.fetch", "input": {"order": "${input.ordr}"}},
    {"id": "lines", "kind": "map", "task": "t.line", "over": "${input.order.lines}",
     "input": "${item}"}]}


def submit(gw: Gateway, spec: dict[str, Any], workflow_input: Any) -> Any:
    return gw.client.post("/v1/workflows", json={"workflow": spec, "input": workflow_input,
                                                 "id": "wf-refs"})


def test_each_unresolvable_reference_is_named_with_what_the_input_has(gw: Gateway) -> None:
    pool, producer = FakePool(), FakeProducer()
    gw.connect(pool, producer)
    doc = assert_problem(submit(gw, SPEC, {"order": {"lines": {"a": 1}}, "customer": "c"}),
                         422, "Input lacks what the spec references")
    assert doc["type"] == "urn:headwater:problem:input-unresolved"
    assert doc["errors"] == [
        "node 'fetch': input: ${input.ordr}: the input has no key 'ordr' (did you mean "
        "'order'?); it has customer, order",
        "node 'lines': over: ${input.order.lines}: input.order.lines is an object, not a "
        "list to fan out over"]
    assert doc["detail"] == "; ".join(doc["errors"])
    assert pool.rows == {} and producer.sent == []  # nothing claimed, nothing produced


def test_an_input_that_resolves_is_accepted(gw: Gateway) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(), producer)
    answer = submit(gw, SPEC, {"ordr": 1, "order": {"lines": [1, 2]}})
    assert answer.status_code == 202, answer.text
    assert len(producer.sent) == 1


def test_at_most_max_input_errors_references_are_listed(gw: Gateway) -> None:
    gw.connect(FakePool())
    spec = {"name": "many", "nodes": [{"id": f"n{i}", "task": "t", "input": f"${{input.k{i}}}"}
                                      for i in range(MAX_INPUT_ERRORS + 5)]}
    doc = assert_problem(submit(gw, spec, {}), 422)
    assert len(doc["errors"]) == MAX_INPUT_ERRORS + 1
    assert doc["errors"][-1] == "and 5 more"
