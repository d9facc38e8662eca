"""``/v1/schedules``: a ``PUT`` is checked at the edge (every fault named by its field),
builds a schedule workflow's spec and submits it as ``schedule:<name>:<generation>``;
the same settings again are the same generation, other settings the next one with the
one before cancelled; ``DELETE`` cancels; pause and resume are signals."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, get_args

import pytest
from gateway_harness import SPEC, FakePool, FakeProducer, Gateway, assert_problem

from headwater.core import events as ev
from headwater.core.kinds.schedule.cron import CATCHUPS, OVERLAPS
from headwater.core.spec import parse_spec
from services.gateway.schedules.generations import ScheduleRequest, cron_faults, timezone_faults

SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
BODY: dict[str, Any] = {"cron": "* * * * * */2", "definition": "one", "input": {"n": 1}}


class SchedulePool(FakePool):
    """``FakePool`` with a registered definition ``one`` (version 3, ``SCHEMA``) and the
    queries of schedules answered from its ``workflows`` rows."""

    async def fetchrow(self, sql: str, *args: Any) -> dict[str, Any] | None:
        """The definition's head and version; a schedule's state (none); else a row."""
        await self._enter()
        if "from definition_heads" in sql:
            return {"version": 3, "deleted": False} if args[0] == "one" else None
        if "from definitions" in sql:
            return {"spec": SPEC, "input_schema": SCHEMA} if args[:2] == ("one", 3) else None
        if "from schedules" in sql:
            return None
        return self.rows.get(args[0])

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        """The generations of a schedule (by id prefix); nothing else."""
        await self._enter()
        if "starts_with(workflow_id" in sql:
            return [{"workflow_id": k, **v} for k, v in self.rows.items()
                    if k.startswith(args[1])]
        return []

    def is_closed(self) -> bool:
        """The pool stands in for a connection that is open."""
        return False

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[SchedulePool]:
        """The pool itself stands in for a connection."""
        await self._enter()
        yield self


@pytest.fixture
def connected(gw: Gateway) -> tuple[Gateway, SchedulePool, FakeProducer]:
    pool, producer = SchedulePool(), FakeProducer()
    gw.connect(pool, producer)
    return gw, pool, producer


def _submitted(producer: FakeProducer) -> list[ev.WorkflowSubmitted]:
    return [r for _, _, r in producer.sent if isinstance(r, ev.WorkflowSubmitted)]


def _cancelled(producer: FakeProducer) -> list[str]:
    return [r.workflow_id for _, _, r in producer.sent if isinstance(r, ev.CancelRequested)]


def test_a_put_submits_the_schedule_workflow(connected: Any) -> None:
    gw, _pool, producer = connected
    answer = gw.client.put("/v1/schedules/nightly", json={**BODY, "timezone": "Europe/Paris",
                                                          "overlap": "allow"})
    assert answer.status_code == 201, answer.text
    assert answer.json()["workflow_id"] == "schedule:nightly:1"
    assert answer.headers["location"] == "/v1/schedules/nightly"
    [record] = _submitted(producer)
    assert record.workflow_id == "schedule:nightly:1"
    assert record.spec["name"] == "schedule:nightly"
    [node] = record.spec["nodes"]
    assert node | {"workflow": None} == {
        "id": "fire", "kind": "schedule", "cron": "* * * * * */2",
        "timezone": "Europe/Paris", "workflow": None, "definition": "one",
        "definition_version": 3, "input": {"n": 1}, "overlap": "allow", "catchup": "none",
        "catchup_max": 10, "misfire_grace": 60.0}
    assert node["workflow"] == SPEC
    parse_spec(record.spec)  # the core takes it


def test_the_same_settings_are_the_same_generation_others_the_next(connected: Any) -> None:
    gw, _pool, producer = connected
    assert gw.client.put("/v1/schedules/s", json=BODY).status_code == 201
    again = gw.client.put("/v1/schedules/s", json=BODY)
    assert again.status_code == 200 and again.json()["generation"] == 1, again.text
    assert len(_submitted(producer)) == 1
    changed = gw.client.put("/v1/schedules/s", json={**BODY, "cron": "*/5 * * * *"})
    assert changed.status_code == 201 and changed.json()["generation"] == 2, changed.text
    assert [r.workflow_id for r in _submitted(producer)] == ["schedule:s:1", "schedule:s:2"]
    assert _cancelled(producer) == ["schedule:s:1"]


def test_a_new_generation_after_a_delete(connected: Any) -> None:
    gw, pool, producer = connected
    gw.client.put("/v1/schedules/s", json=BODY)
    assert gw.client.delete("/v1/schedules/s").status_code == 204
    assert _cancelled(producer) == ["schedule:s:1"]
    pool.rows["schedule:s:1"]["status"] = "cancelled"  # the projection, once applied
    assert_problem(gw.client.get("/v1/schedules/s"), 404)
    assert_problem(gw.client.delete("/v1/schedules/s"), 404)
    again = gw.client.put("/v1/schedules/s", json=BODY)
    assert again.status_code == 201 and again.json()["generation"] == 2, again.text


def test_get_shows_the_settings_before_the_coordinator_accepted_it(connected: Any) -> None:
    gw, _pool, _producer = connected
    gw.client.put("/v1/schedules/s", json=BODY)
    doc = gw.client.get("/v1/schedules/s").json()
    assert doc["generation"] == 1 and doc["status"] == "accepted", doc
    assert doc["definition"] == {"name": "one", "version": 3}
    assert doc["cron"] == BODY["cron"] and doc["paused"] is False and doc["runs"] == []
    assert doc["next_fire_at"] is None


@pytest.mark.parametrize(("body", "faults"), [
    ({**BODY, "cron": "every day"}, ["cron: 'every day' has 2 fields"]),
    ({**BODY, "cron": "61 * * * *"}, ["cron: '61 * * * *' is not a valid"]),
    ({**BODY, "cron": "H * * * *"}, ["cron: 'H * * * *': croniter's hashed"]),
    ({**BODY, "cron": "0 0 30 2 *"}, ["cron: '0 0 30 2 *' never fires"]),
    ({**BODY, "timezone": "Mars/Olympus"}, ["timezone: 'Mars/Olympus' is not"]),
    ({**BODY, "timezone": "America"}, ["timezone: 'America' is not"]),
    ({**BODY, "definition": "nope"}, ["definition: no definition nope"]),
    ({**BODY, "definition": "one@x"}, ["definition: definition reference 'one@x'"]),
    ({**BODY, "input": {"n": "x"}}, ["input.n: "]),
    ({**BODY, "cron": "bad", "input": {}}, ["cron: 'bad' has 1 fields", "input: "]),
    ({**BODY, "overlap": "sometimes"}, ["overlap: Input should be"]),
    ({**BODY, "catchup_max": 0}, ["catchup_max: Input should be greater"]),
    ({**BODY, "start_at": "2026-01-01T00:00:00"}, ["start_at: Input should have timezone"]),
    ({**BODY, "every": 2}, ["every: Extra inputs are not permitted"]),
    ({"definition": "one"}, ["cron: Field required"]),
])
def test_a_bad_put_is_422_naming_the_field(connected: Any, body: dict[str, Any],
                                           faults: list[str]) -> None:
    gw, pool, producer = connected
    doc = assert_problem(gw.client.put("/v1/schedules/s", json=body), 422)
    for fault in faults:
        assert any(e.startswith(fault) for e in doc["errors"]), (fault, doc["errors"])
    assert producer.sent == [] and pool.rows == {}


def test_a_bad_name_is_422(connected: Any) -> None:
    gw, _pool, _producer = connected
    doc = assert_problem(gw.client.put("/v1/schedules/-x", json=BODY), 422)
    assert doc["errors"][0].startswith("name: schedule name '-x' is invalid")


def test_unknown_schedules_are_404(connected: Any) -> None:
    gw, _pool, producer = connected
    for answer in (gw.client.get("/v1/schedules/none"),
                   gw.client.post("/v1/schedules/none/pause"),
                   gw.client.post("/v1/schedules/none/resume"),
                   gw.client.delete("/v1/schedules/none")):
        assert_problem(answer, 404)
    assert producer.sent == []


def test_pause_and_resume_signal_the_live_generation(connected: Any) -> None:
    gw, pool, producer = connected
    gw.client.put("/v1/schedules/s", json=BODY)
    pool.rows["schedule:s:1"]["status"] = "running"
    for name in ("pause", "resume"):
        answer = gw.client.post(f"/v1/schedules/s/{name}")
        assert answer.status_code == 202, answer.text
    signals = [r for _, _, r in producer.sent if isinstance(r, ev.SignalSent)]
    assert [(s.workflow_id, s.name, s.fields) for s in signals] == [
        ("schedule:s:1", "pause", {}), ("schedule:s:1", "resume", {})]


def test_the_body_model_takes_the_cores_policies() -> None:
    fields = ScheduleRequest.model_fields
    assert get_args(fields["overlap"].annotation) == OVERLAPS
    assert get_args(fields["catchup"].annotation) == CATCHUPS
    assert cron_faults("*/5 * * * *") == [] and timezone_faults("Europe/Paris") == []


def test_the_openapi_document_describes_schedules(gw: Gateway) -> None:
    paths = gw.client.get("/openapi.json").json()["paths"]
    assert {"put", "get", "delete"} <= set(paths["/v1/schedules/{name}"])
    put = paths["/v1/schedules/{name}"]["put"]
    body = put["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["cron", "definition"]
    assert "422" in put["responses"]
    assert "post" in paths["/v1/schedules/{name}/pause"]
    assert "get" in paths["/v1/schedules"]
