"""``POST /v1/definitions/{name}/pause`` and ``/resume``: the definition's row written
(or deleted), one request per running run of it produced to ``control`` (a resume only
for the runs its pause paused), 404 for an unknown definition; and a paused
definition's new runs are submitted paused (``paused_by``), and its document and the
list show its pause."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from headwater.core import events as ev
from services.gateway.pauses.definitions import LIVE, paused_by
from services.gateway.runs.claims import CLAIMED


@dataclass
class DefinitionPool(FakePool):
    """A projection holding definition ``refund`` and the runs ``running`` of it."""

    running: list[dict[str, Any]] = field(default_factory=list)
    executed: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    asked: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        if "from definition_heads" in sql:
            return ({"version": 3, "deleted": args[0] == "gone", "tenant": None}
                    if args[0] in ("refund", "gone") else None)
        return await super().fetchrow(sql, *args)

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        self.asked.append((sql, args))
        if "from workflows where definition" in sql:
            if "status = any($2::text[])" in sql:  # a pause: the live statuses it names
                return [r for r in self.running if r.get("status", "running") in args[1]]
            return self.running
        return []

    async def execute(self, sql: str, *args: Any) -> str:
        self.executed.append((sql, args))
        return "OK"


def connected(gw: Gateway, running: list[str]) -> tuple[DefinitionPool, FakeProducer]:
    pool, producer = DefinitionPool(running=[{"workflow_id": w} for w in running]), FakeProducer()
    gw.connect(pool, producer)
    return pool, producer


def test_a_pause_records_the_definition_and_pauses_each_running_run(gw: Gateway) -> None:
    pool, producer = connected(gw, ["wf-1", "wf-2"])
    response = gw.client.post("/v1/definitions/refund/pause", json={"reason": "API down"})
    assert response.status_code == 202, response.text
    assert response.json() == {"definition": "refund", "paused": True, "runs": 2,
                               "links": {"self": "/v1/definitions/refund"}}
    [(sql, args)] = pool.executed
    assert sql.startswith("insert into definition_pauses") and args[0] == "refund"
    assert "paused is null" in pool.asked[-1][0], "runs paused already are left alone"
    sent = {key: record for _, key, record in producer.sent}
    assert set(sent) == {b"wf-1", b"wf-2"}
    for wid, record in sent.items():
        assert isinstance(record, ev.PauseRequested)
        assert (record.by, record.reason) == ("definition:refund", "API down")
        assert record.request_id.endswith(f":{wid.decode()}")


def test_a_pause_also_pauses_a_run_claimed_but_not_accepted_yet(gw: Gateway) -> None:
    """A run submitted just before the definition's pause shows as ``accepted`` (the
    gateway's claim) until the coordinator accepts it: it carries no ``paused_by``, so
    the pause sends it a request as it does to a running run; an ended one gets none."""
    pool, producer = DefinitionPool(running=[
        {"workflow_id": "wf-claimed", "status": "accepted"},
        {"workflow_id": "wf-running", "status": "running"},
        {"workflow_id": "wf-done", "status": "succeeded"}]), FakeProducer()
    gw.connect(pool, producer)
    response = gw.client.post("/v1/definitions/refund/pause")
    assert response.status_code == 202, response.text
    assert response.json()["runs"] == 2
    assert {key for _, key, _ in producer.sent} == {b"wf-claimed", b"wf-running"}
    assert CLAIMED in LIVE


def test_a_resume_deletes_the_row_and_resumes_the_runs_its_pause_paused(gw: Gateway) -> None:
    pool, producer = connected(gw, ["wf-1"])
    response = gw.client.post("/v1/definitions/refund/resume")
    assert response.status_code == 202, response.text
    assert response.json()["paused"] is False and response.json()["runs"] == 1
    assert pool.executed[0][0].startswith("delete from definition_pauses")
    sql, args = pool.asked[-1]
    assert "(paused is null or paused->>'by' = $3)" in sql  # not yet shown paused too
    assert args[1] == LIVE and args[2] == "definition:refund"
    [(_, _, record)] = producer.sent
    assert isinstance(record, ev.ResumeRequested) and record.by == "definition:refund"


def test_an_unknown_definition_is_404_and_nothing_is_written(gw: Gateway) -> None:
    pool, producer = connected(gw, ["wf-1"])
    assert_problem(gw.client.post("/v1/definitions/nope/pause"), 404)
    assert pool.executed == [] and producer.sent == []


def test_a_deleted_definition_cannot_be_paused_but_its_pause_can_end(gw: Gateway) -> None:
    """Deleting a paused definition leaves its runs paused: its resume still resumes
    them (a pause of it is a 404 like any unknown name)."""
    _pool, producer = connected(gw, ["wf-1"])
    assert_problem(gw.client.post("/v1/definitions/gone/pause"), 404)
    assert producer.sent == []
    response = gw.client.post("/v1/definitions/gone/resume")
    assert response.status_code == 202, response.text
    [(_, _, record)] = producer.sent
    assert isinstance(record, ev.ResumeRequested) and record.by == "definition:gone"


def test_a_paused_definitions_runs_are_submitted_paused() -> None:
    pool = FakePool(paused_definitions={"refund"})
    assert asyncio.run(paused_by(pool, "refund")) == "definition:refund"
    assert asyncio.run(paused_by(pool, "other")) is None
    assert asyncio.run(paused_by(pool, None)) is None


PAUSED_AT = datetime(2026, 3, 2, 9, 20, tzinfo=UTC)


@dataclass
class RegistryPool(DefinitionPool):
    """``DefinitionPool`` with version 3 of ``refund`` stored and ``refund`` paused."""

    async def fetchval(self, sql: str, *args: Any) -> Any:
        if sql.startswith("select max(version) from definitions"):
            return 3
        return await super().fetchval(sql, *args)

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        if sql.startswith("select spec, input_schema, digest, created_at from definitions"):
            return {"spec": {"name": "refund", "nodes": []}, "input_schema": None,
                    "digest": "d", "created_at": PAUSED_AT}
        return await super().fetchrow(sql, *args)

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        self.asked.append((sql, args))
        if "from definition_pauses" in sql:
            return [{"name": n, "paused_at": PAUSED_AT, "paused_by": "ops", "reason": "down"}
                    for n in args[0] if n == "refund"]
        if "from definition_heads h" in sql:
            return [{"name": n, "version": 1, "digest": "d", "created_at": PAUSED_AT}
                    for n in ("other", "refund")]
        return []


def test_a_definitions_document_and_the_list_show_its_pause(gw: Gateway) -> None:
    gw.connect(RegistryPool())
    paused = {"since": "2026-03-02T09:20:00+00:00", "by": "ops", "reason": "down"}
    response = gw.client.get("/v1/definitions/refund")
    assert response.status_code == 200, response.text
    assert response.json()["paused"] == paused
    items = gw.client.get("/v1/definitions").json()["items"]
    assert {i["name"]: i["paused"] for i in items} == {"other": None, "refund": paused}


@pytest.mark.parametrize(("verb", "body"), [("pause", {"request_id": "ops-1"}),
                                             ("resume", {"reason": "why"}),
                                             ("resume", {"request_id": "ops-1"})])
def test_a_field_the_definitions_route_does_not_use_is_422(gw: Gateway, verb: str,
                                                           body: dict[str, Any]) -> None:
    """A definition's pause takes a reason only (each run's request id is derived from
    the operation), its resume nothing: another field is a 422 naming it."""
    pool, producer = connected(gw, ["wf-1"])
    doc = assert_problem(gw.client.post(f"/v1/definitions/refund/{verb}", json=body), 422)
    assert next(iter(body)) in doc["detail"], doc
    assert producer.sent == [] and pool.executed == []
