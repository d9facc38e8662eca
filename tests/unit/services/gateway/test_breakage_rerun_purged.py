"""Breakage: a rerun or reset whose source is deleted by projection retention between
the gateway's read of the source's row and its read of the source's events (the purge
deletes a run whole, in one statement, but the gateway reads the row and the events in
two). The stand-in pool answers exactly that: the row, and no events."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.services.gateway.gateway_harness import SPEC, FakePool, assert_problem, gateway


def _purged_under_the_read() -> FakePool:
    row: dict[str, Any] = {"status": "failed", "seq": 4, "name": "one", "tenant": None,
                           "spec": SPEC, "input": {}}
    return FakePool(rows={"gone": row})


@pytest.mark.parametrize(("verb", "body"), [("rerun", {}), ("reset", {"node": "a"})])
def test_a_rerun_of_a_source_purged_under_the_request_is_404(verb: str,
                                                             body: dict[str, Any]) -> None:
    with gateway() as gw:
        gw.connect(_purged_under_the_read())
        response = gw.client.post(f"/v1/workflows/gone/{verb}", json=body)
        assert_problem(response, 404, "Not found")
