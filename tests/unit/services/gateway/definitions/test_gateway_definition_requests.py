"""``PUT /v1/definitions/{name}`` refuses a bad name, body, spec or input schema with 422
naming every fault, before anything is stored; a submission by name with a malformed
reference or with ``workflow`` beside it is 422 too."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_harness import SPEC, FakePool, FakeProducer, Gateway, assert_problem


@pytest.mark.parametrize(("name", "body", "faults"), [
    ("bad name", {"workflow": SPEC}, ["name: definition name 'bad name' is invalid"]),
    ("ok", {"workflow": SPEC, "extra": 1}, ["extra: Extra inputs are not permitted"]),
    ("ok", {"input_schema": {}}, ["workflow: Field required"]),
    ("ok", {"workflow": SPEC, "input_schema": {"type": "nope"}}, ["input_schema.type: "]),
    ("ok", {"workflow": {"name": "x", "nodes": [{"id": "a"}]},
            "input_schema": {"required": "who"}},
     ["input_schema.required: ", "workflow: node 'a': "]),
    ("ok", {"name": "x", "nodes": [{"id": "a", "task": "t", "bogus": 1}]},
     ["workflow: node 'a': unknown field 'bogus'"]),
    ("ok", {"workflow": {"name": "x", "nodes": [
        {"id": "c", "kind": "workflow", "definition": "no such@x"}]}},
     ["nodes.c: definition: "]),
])
def test_a_bad_put_is_422_naming_each_fault(gw: Gateway, name: str, body: dict[str, Any],
                                            faults: list[str]) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(), producer)
    doc = assert_problem(gw.client.put(f"/v1/definitions/{name}", json=body), 422)
    errors = doc["errors"]
    for fault in faults:
        assert any(e.startswith(fault) for e in errors), (fault, errors)
    assert producer.sent == []


@pytest.mark.parametrize("body", [
    b'{"name": "x", "nodes": [{"id": "a", "task": "t", "input": {"n": 12345678901234567890123}}]}',
    b'{"workflow": {"name": "x", "nodes": [{"id": "a", "task": "t", "input": {"n": '
    b'12345678901234567890123}}]}}',
])
def test_a_spec_integer_beyond_64_bits_is_422_naming_it(gw: Gateway, body: bytes) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(), producer)
    doc = assert_problem(gw.client.put("/v1/definitions/ok", content=body), 422)
    assert doc["errors"] == ["workflow.nodes[0].input.n: integer outside the signed 64-bit "
                             "range"], doc
    assert producer.sent == []


def test_a_body_that_is_not_json_is_422(gw: Gateway) -> None:
    gw.connect(FakePool())
    assert_problem(gw.client.put("/v1/definitions/ok", content=b"{nope"), 422)


@pytest.mark.parametrize(("body", "fault"), [
    ({"definition": "bad name", "input": {}}, "definition: definition name 'bad name'"),
    ({"definition": "ok@0", "input": {}}, "definition: definition reference 'ok@0'"),
    ({"definition": "ok", "workflow": SPEC}, "definition: not with workflow"),
])
def test_a_bad_submission_by_name_is_422(gw: Gateway, body: dict[str, Any],
                                         fault: str) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(), producer)
    doc = assert_problem(gw.client.post("/v1/workflows", json=body), 422)
    assert any(e.startswith(fault) for e in doc["errors"]), doc
    assert producer.sent == []


def test_the_openapi_document_describes_the_registry(gw: Gateway) -> None:
    paths = gw.client.get("/openapi.json").json()["paths"]
    one = paths["/v1/definitions/{name}"]
    assert {"put", "get", "delete"} <= set(one)
    assert "oneOf" in one["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert {"200", "201", "422", "503"} <= set(one["put"]["responses"])
    assert {"404", "410"} <= set(one["get"]["responses"])
    assert "get" in paths["/v1/definitions"]
