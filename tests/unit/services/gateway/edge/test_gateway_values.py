"""Values PostgreSQL or orjson cannot hold are a 422 naming their path, never a 500.

Before the fix: U+0000 reached PostgreSQL (500), integers beyond 64 bits broke orjson
(500), and NaN, Infinity and 1e400 were stored as null.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from gateway_harness import SPEC, FakePool, FakeProducer, Gateway, assert_problem


def spec_with(**changes: Any) -> dict[str, Any]:
    """``SPEC`` with top-level changes."""
    return {**SPEC, **changes}


def raw_body(input_text: str) -> str:
    """A submission of ``SPEC`` whose input is raw JSON text (``NaN``: not ``json.dumps``)."""
    return '{"workflow": ' + json.dumps(SPEC) + ', "input": ' + input_text + "}"


@pytest.mark.parametrize(("body", "fault"), [
    ({"workflow": SPEC, "input": {"a": {"b": [0, 1, 2, "x\x00"]}}},
     "input.a.b[3]: contains U+0000"),
    ({"workflow": SPEC, "input": {"a\x00": 1}}, 'input["a\\u0000"]: the key contains U+0000'),
    ({"workflow": spec_with(name="a\x00b")}, "workflow.name: contains U+0000"),
    ({"workflow": spec_with(nodes=[{"id": "a", "task": "t\x00"}])},
     "workflow.nodes[0].task: contains U+0000"),
    ({"workflow": SPEC, "tenant": "t\x00"}, "tenant: contains U+0000"),
    ({"workflow": SPEC, "input": {"n": 2**64}},
     "input.n: integer outside the signed 64-bit range"),
    ({"workflow": SPEC, "input": [-(2**63) - 1]},
     "input[0]: integer outside the signed 64-bit range"),
    ({"workflow": spec_with(retry={"max_attempts": 2**80})},
     "workflow.retry.max_attempts: integer outside the signed 64-bit range"),
])
def test_a_value_the_database_cannot_hold_is_422(gw: Gateway, body: dict[str, Any],
                                                 fault: str) -> None:
    pool, producer = FakePool(), FakeProducer()
    gw.connect(pool, producer)
    response = gw.client.post("/v1/workflows", content=json.dumps(body))
    doc = assert_problem(response, 422, "Invalid request")
    assert doc["detail"] == fault
    assert doc["errors"] == [fault]
    assert pool.rows == {} and producer.sent == [], "nothing claimed, nothing produced"


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_a_non_finite_number_is_422_not_null(gw: Gateway, number: str) -> None:
    pool = FakePool()
    gw.connect(pool)
    response = gw.client.post("/v1/workflows", content=raw_body('{"x": [1, ' + number + "]}"))
    doc = assert_problem(response, 422)
    assert doc["detail"] == "input.x[1]: not a finite number (NaN or infinity)"
    assert pool.rows == {}


def test_nesting_deeper_than_64_is_422(gw: Gateway) -> None:
    gw.connect(FakePool())
    response = gw.client.post("/v1/workflows", content=raw_body("[" * 65 + "]" * 65))
    doc = assert_problem(response, 422)
    assert doc["detail"] == "input" + "[0]" * 64 + ": nested deeper than 64 levels"
    far_too_deep = raw_body("[" * 5000 + "]" * 5000)  # beyond the JSON parser's own limit
    assert_problem(gw.client.post("/v1/workflows", content=far_too_deep), 422)


def test_values_at_the_limits_are_accepted(gw: Gateway) -> None:
    producer = FakeProducer()
    gw.connect(FakePool(), producer)
    workflow_input = {"max": 2**63 - 1, "min": -(2**63), "f": 1.7976931348623157e308,
                      "deep": json.loads("[" * 63 + "]" * 63),  # level 1 is the object
                      "s": "\u2028é"}
    response = gw.client.post("/v1/workflows", json={"workflow": SPEC, "input": workflow_input,
                                                     "tenant": "acme"})
    assert response.status_code == 202, response.text
    assert producer.sent[0][2].input == workflow_input


def test_a_cancel_reason_with_nul_is_422(gw: Gateway) -> None:
    pool, producer = FakePool(), FakeProducer()
    gw.connect(pool, producer)
    assert gw.client.post("/v1/workflows", json={"id": "w1", "workflow": SPEC}).status_code == 202
    response = gw.client.post("/v1/workflows/w1/cancel", json={"reason": "because\x00"})
    assert assert_problem(response, 422)["detail"] == "reason: contains U+0000"
    assert len(producer.sent) == 1, "no CancelRequested produced"
