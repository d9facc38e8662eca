"""Values the projection indexes are bounded over HTTP: a spec ``name`` of more than 200
characters, a tenant of more than 200 and a definition that is no definition name get a
4xx problem, never a 500 from PostgreSQL (an index row over 2704 bytes)."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_harness import FakePool, Gateway

SPEC = {"name": "wf", "nodes": [{"id": "a", "task": "t.a"}]}


@pytest.mark.parametrize(("body", "status", "said"), [
    ({"workflow": {**SPEC, "name": "n" * 3000}}, 422, "name: at most 200 characters"),
    ({"workflow": SPEC, "tenant": "t" * 201}, 422, "tenant"),
    ({"definition": "d" * 9000}, 422, "definition"),
    ({"definition": "defn@0"}, 422, "definition"),
], ids=["name-3000", "tenant-201", "definition-9kb", "definition-version-0"])
def test_an_unindexable_value_is_a_problem_not_a_500(gw: Gateway, body: dict[str, Any],
                                                      status: int, said: str) -> None:
    gw.connect(FakePool())
    response = gw.client.post("/v1/workflows", json={**body, "queue_anyway": True})
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert said in response.text
