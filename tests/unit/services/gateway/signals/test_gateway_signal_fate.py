"""``GET /v1/workflows/{id}/signals/{signal_id}``: what the history recorded wins (a
kept signal is ``buffered``, a consumed one names its wait and when, a discarded one
why), then a refusal read back from the dead letters, then the gateway's receipt
(``received``); an id never sent is 404. A signal the gateway answers 202 is recorded
as received."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from headwater.core.status import WorkflowStatus

WF = "wf-fate"
AT = datetime(2026, 3, 2, 9, 15, 1, tzinfo=UTC)
LATER = datetime(2026, 3, 2, 9, 15, 2, tzinfo=UTC)
URL = f"/v1/workflows/{WF}/signals/s-1"


@dataclass
class FatePool(FakePool):
    """A projection holding one signal's ``signals`` row and ``signal_receipts`` row."""

    recorded: dict[str, Any] | None = None
    receipt: dict[str, Any] | None = None
    executed: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        if sql.startswith("select s.name"):
            return self.recorded
        if sql.startswith("select name, idx, received_at"):
            return self.receipt
        return await super().fetchrow(sql, *args)

    async def execute(self, sql: str, *args: Any) -> str:
        self.executed.append((sql, args))
        return await super().execute(sql, *args)


def receipt(refused: str | None = None) -> dict[str, Any]:
    return {"name": "approval", "idx": None, "received_at": AT, "refused_reason": refused,
            "refused_at": LATER if refused else None}


def recorded(status: str, node: str = "", reason: str = "") -> dict[str, Any]:
    return {"name": "approval", "idx": None, "status": status, "node": node,
            "reason": reason, "at": AT, "consumed_at": LATER if status == "consumed" else None}


@pytest.mark.parametrize(("rows", "then"), [
    ({"receipt": receipt()}, {"status": "received", "at": AT.isoformat()}),
    ({"recorded": recorded("received"), "receipt": receipt()},
     {"status": "buffered", "at": AT.isoformat()}),
    ({"recorded": recorded("consumed", node="approve"), "receipt": receipt()},
     {"status": "consumed", "node": "approve", "at": LATER.isoformat()}),
    ({"recorded": recorded("discarded", reason="wait approve has already succeeded")},
     {"status": "discarded", "reason": "wait approve has already succeeded",
      "received_at": None}),
    ({"receipt": receipt(refused="the workflow has already ended (succeeded)")},
     {"status": "refused", "reason": "the workflow has already ended (succeeded)",
      "at": LATER.isoformat(), "received_at": AT.isoformat()}),
    ({"recorded": recorded("consumed", node="approve"),
      "receipt": receipt(refused="a later copy")},
     {"status": "consumed", "reason": None}),
])
def test_a_signals_fate_is_read_in_order(gw: Gateway, rows: dict[str, Any],
                                         then: dict[str, Any]) -> None:
    gw.connect(FatePool(rows={WF: {"status": "running", "tenant": None}}, **rows))
    response = gw.client.get(URL)
    assert response.status_code == 200, response.text
    doc = response.json()
    assert {k: doc[k] for k in then} == then, doc
    assert (doc["workflow_id"], doc["signal_id"], doc["name"]) == (WF, "s-1", "approval")
    assert doc["links"]["signal"] == URL


def test_a_signal_never_sent_is_404(gw: Gateway) -> None:
    gw.connect(FatePool(rows={WF: {"status": "running", "tenant": None}}))
    assert_problem(gw.client.get(URL), 404)


def test_a_signal_answered_202_is_recorded_as_received(gw: Gateway) -> None:
    spec = {"name": "w", "nodes": [{"id": "approve", "kind": "wait", "signal": "approval"}]}
    pool = FatePool(rows={WF: {"status": WorkflowStatus.RUNNING, "seq": 3, "spec": spec,
                               "input": None, "tenant": None}})
    gw.connect(pool, FakeProducer())
    response = gw.client.post(f"/v1/workflows/{WF}/signals/approval",
                              json={"signal_id": "s-1", "fields": {}})
    assert response.status_code == 202, response.text
    [(sql, args)] = [(s, a) for s, a in pool.executed if "signal_receipts" in s]
    assert sql.startswith("insert into signal_receipts")
    assert args == (WF, "s-1", "approval", None)
