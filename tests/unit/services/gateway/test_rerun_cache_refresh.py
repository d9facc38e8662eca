"""A reset to a cached node with ``?cache=refresh``: the node runs again instead of
taking the output its source stored under its key (which is what the reset would
otherwise get, the source having computed it), as a submission's ``?cache=refresh``
does; a rerun takes it too, and any other value of ``cache`` is refused."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from headwater.core import events as ev
from headwater.core.machine import step
from tests.unit.services.gateway.gateway_harness import (
    FakePool,
    FakeProducer,
    assert_problem,
    gateway,
)

AT = 1_700_000_000_000
SPEC: dict[str, Any] = {"name": "cached", "nodes": [
    {"id": "a", "task": "t.a", "cache": {"key": "${input.doc}"}},
    {"id": "b", "task": "t.b", "needs": ["a"]}]}


def _history(fail_b: bool) -> list[dict[str, Any]]:
    """The source's event rows: ``a`` computed (a miss), ``b`` succeeded or failed."""
    cid = None
    state = None
    rows: list[dict[str, Any]] = []

    def apply(record: ev.Input) -> None:
        nonlocal state
        result = step(state, record)
        state = result.state
        rows.extend({"seq": e.seq, "type": e.type, "data": orjson.loads(orjson.dumps(e.body))}
                    for e in result.events)

    apply(ev.WorkflowSubmitted("src", SPEC, {"doc": "d"}, AT, None))
    cid = next(r["data"]["cache"] for r in rows if r["type"] == "TaskLookedUp")
    apply(ev.CacheAnswered("src", "a", None, 1, cid, False, AT + 1))
    apply(ev.TaskSucceeded("src", "a", None, 1, AT + 2, {"v": 1}))
    if fail_b:
        apply(ev.TaskFailed("src", "b", None, 1, AT + 3, "Boom", "boom", retryable=False))
    else:
        apply(ev.TaskSucceeded("src", "b", None, 1, AT + 3, {"w": 2}))
    return rows


class SourcePool(FakePool):
    """The projection holding the source run ``src`` and its history."""

    def __init__(self, fail_b: bool) -> None:
        super().__init__(rows={"src": {
            "status": "failed" if fail_b else "succeeded", "seq": 9, "name": "cached",
            "tenant": None, "spec": SPEC, "input": {"doc": "d"}}})
        self.history = _history(fail_b)

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        await self._enter()
        return self.history if sql.startswith("select seq, type, data from events") else []


def _submitted(producer: FakeProducer) -> ev.WorkflowSubmitted:
    (record,) = [r for _, _, r in producer.sent if isinstance(r, ev.WorkflowSubmitted)]
    return record


@pytest.mark.parametrize(("verb", "body", "failed"), [
    ("reset", {"node": "a", "id": "again"}, False), ("rerun", {"id": "again"}, True)])
def test_a_reset_or_rerun_with_cache_refresh_bypasses_the_hits(
        verb: str, body: dict[str, Any], failed: bool) -> None:
    with gateway() as gw:
        producer = FakeProducer()
        gw.connect(SourcePool(failed), producer)
        response = gw.client.post(f"/v1/workflows/src/{verb}?cache=refresh", json=body)
        assert response.status_code == 202, response.text
        assert _submitted(producer).cache_refresh


def test_a_reset_without_it_takes_the_hits_and_a_bad_value_is_refused() -> None:
    with gateway() as gw:
        producer = FakeProducer()
        gw.connect(SourcePool(False), producer)
        response = gw.client.post("/v1/workflows/src/reset", json={"node": "a", "id": "x"})
        assert response.status_code == 202, response.text
        assert not _submitted(producer).cache_refresh
        bad = gw.client.post("/v1/workflows/src/reset?cache=yes", json={"node": "a"})
        assert_problem(bad, 422)
