"""``POST /v1/workflows/{id}/signals/{name}``: 202 once the signal is produced to
``control``; 400 when no wait of the workflow takes it; 404, 409, 413, 422 and 503 as
for the other routes. The workflow's spec and status come from the projection."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from gateway_harness import FakePool, FakeProducer, Gateway, assert_problem

from headwater.core import events as ev
from headwater.core.status import WorkflowStatus

WF = "wf-signal-1"
URL = f"/v1/workflows/{WF}/signals/approval"
SPEC: dict[str, Any] = {"name": "approve", "nodes": [
    {"id": "draft", "task": "t.draft"},
    {"id": "approve", "kind": "wait", "signal": "approval", "needs": ["draft"],
     "timeout": 60, "fields": {"approved": "boolean",
                               "note": {"type": "string", "required": False}}},
    {"id": "review", "kind": "wait", "signal": "review", "over": "${input.items}",
     "fields": {"score": "integer"}},
]}
HEX32 = re.compile(r"[0-9a-f]{32}")


def pool_with(status: str = WorkflowStatus.RUNNING, spec: Any = None) -> FakePool:
    """A projection holding workflow ``WF`` in ``status``."""
    return FakePool(rows={WF: {"status": status, "seq": 3, "spec": spec or SPEC,
                               "input": {"items": [1, 2, 3]}, "tenant": None}})


def connected(gw: Gateway, status: str = WorkflowStatus.RUNNING) -> FakeProducer:
    """Connect ``gw`` to a projection holding ``WF``; return its producer."""
    producer = FakeProducer()
    gw.connect(pool_with(status), producer)
    return producer


def test_a_signal_a_wait_takes_is_produced_to_control_and_answered_202(gw: Gateway) -> None:
    producer = connected(gw)
    response = gw.client.post(URL, json={"fields": {"approved": True, "note": "ok ✓"}})
    assert response.status_code == 202, response.text
    doc = response.json()
    assert HEX32.fullmatch(doc["signal_id"]), "a missing signal_id is a random uuid4 hex"
    assert doc == {"workflow_id": WF, "signal": "approval", "signal_id": doc["signal_id"],
                   "links": {"self": f"/v1/workflows/{WF}",
                             "events": f"/v1/workflows/{WF}/events"}}
    [(topic, key, record)] = producer.sent
    assert (topic, key) == (gw.hw.settings.topics.control, WF.encode())
    assert record == ev.SignalSent(WF, "approval", record.at_ms, None, doc["signal_id"],
                                   {"approved": True, "note": "ok ✓"})


def test_the_senders_signal_id_and_an_items_index_are_kept(gw: Gateway) -> None:
    producer = connected(gw)
    response = gw.client.post(f"/v1/workflows/{WF}/signals/review",
                              json={"signal_id": "mail-42", "index": 2,
                                    "fields": {"score": 7}})
    assert response.status_code == 202, response.text
    assert response.json()["signal_id"] == "mail-42"
    [(_, _, record)] = producer.sent
    assert (record.name, record.index, record.signal_id, record.fields) == (
        "review", 2, "mail-42", {"score": 7})


def test_random_signal_ids_differ(gw: Gateway) -> None:
    connected(gw)
    ids = {gw.client.post(URL, json={"fields": {"approved": False}}).json()["signal_id"]
           for _ in range(3)}
    assert len(ids) == 3


def test_a_workflow_not_accepted_yet_takes_signals(gw: Gateway) -> None:
    """A claimed id (``accepted``, seq 0): its coordinator keeps the signal until the
    submission arrives; the gateway checks it against the spec it claimed with."""
    producer = connected(gw, "accepted")
    response = gw.client.post(URL, json={"fields": {"approved": True}})
    assert response.status_code == 202, response.text
    assert len(producer.sent) == 1


@pytest.mark.parametrize(("url", "body", "named"), [
    (f"/v1/workflows/{WF}/signals/nobody", {"fields": {"approved": True}}, "nobody"),
    (URL, {"fields": {}}, "approved"),
    (URL, {"fields": {"note": "no approval"}}, "approved"),
    (URL, {"fields": {"approved": "yes"}}, "approved"),
    (URL, {"fields": {"approved": True, "note": 5}}, "note"),
    (f"/v1/workflows/{WF}/signals/review", {"fields": {"score": 1.5}, "index": 0}, "score"),
], ids=["undeclared signal", "no fields", "missing field", "wrong type",
        "wrong type of an optional field", "a number for an integer"])
def test_a_signal_no_wait_takes_is_400_naming_the_fault(gw: Gateway, url: str,
                                                        body: dict[str, Any],
                                                        named: str) -> None:
    producer = connected(gw)
    doc = assert_problem(gw.client.post(url, json=body), 400, "Invalid signal")
    assert named in doc["detail"], doc
    assert doc["errors"] == [doc["detail"]]
    assert producer.sent == [], "nothing produced"


@pytest.mark.parametrize(("signal_id", "fault"), [
    ("a\nb", "signal_id must not contain control characters (U+000A at 1)"),
    ("\x1b[2Jgone", "signal_id must not contain control characters (U+001B at 0)"),
    ("del\x7f", "signal_id must not contain control characters (U+007F at 3)"),
    ("c1\x9b", "signal_id must not contain control characters (U+009B at 2)"),
], ids=["newline", "escape", "delete", "C1 control"])
def test_a_signal_id_with_control_characters_is_400(gw: Gateway, signal_id: str,
                                                    fault: str) -> None:
    """The check the coordinator dead-letters by (``signals.signal_fault``): ids that
    PostgreSQL, the logs and a terminal cannot show as sent. U+0000 is a 422, as in
    every body (``test_a_malformed_body_is_422``); over 200 characters too."""
    producer = connected(gw)
    doc = assert_problem(gw.client.post(URL, json={"fields": {"approved": True},
                                                   "signal_id": signal_id}),
                         400, "Invalid signal")
    assert doc["detail"] == fault and doc["errors"] == [fault]
    assert producer.sent == []
    assert gw.client.post(URL, json={"fields": {"approved": True},
                                     "signal_id": "mail 42 ✓"}).status_code == 202


class ExpandedPool(FakePool):
    """A projection whose ``nodes`` rows say wait ``review`` expanded to 3 items."""

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        await self._enter()
        return [{"node": "review", "total": 3}] if sql.startswith("select node, total") else []


@pytest.mark.parametrize(("url", "body", "fault"), [
    (URL, {"fields": {"approved": True}, "index": 0}, "takes no index"),
    (f"/v1/workflows/{WF}/signals/review", {"fields": {"score": 1}}, "needs the item's index"),
    (f"/v1/workflows/{WF}/signals/review", {"fields": {"score": 1}, "index": 3},
     "index 3 is out of range"),
], ids=["index for a plain wait", "no index for a wait per item", "index beyond the list"])
def test_a_signal_for_no_item_of_the_wait_is_400(gw: Gateway, url: str, body: dict[str, Any],
                                                 fault: str) -> None:
    producer = FakeProducer()
    gw.connect(ExpandedPool(rows=pool_with().rows), producer)
    doc = assert_problem(gw.client.post(url, json=body), 400, "Invalid signal")
    assert fault in doc["detail"], doc
    assert producer.sent == []
    ok = gw.client.post(f"/v1/workflows/{WF}/signals/review",
                        json={"fields": {"score": 1}, "index": 2})
    assert ok.status_code == 202, ok.text


def test_unknown_workflow_is_404(gw: Gateway) -> None:
    producer = connected(gw)
    doc = assert_problem(gw.client.post("/v1/workflows/nope/signals/approval",
                                        json={"fields": {"approved": True}}), 404)
    assert doc["detail"] == "no workflow nope"
    assert producer.sent == []


@dataclass
class RecordedPool(FakePool):
    """A projection whose ``signals`` rows hold the signal ids in ``recorded``."""

    recorded: set[str] = field(default_factory=set)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        if sql.startswith("select 1 from signals"):
            await self._enter()
            return 1 if args[1] in self.recorded else None
        return await super().fetchval(sql, *args)


@pytest.mark.parametrize("status", [s for s in WorkflowStatus if s.terminal])
def test_an_ended_workflow_is_409(gw: Gateway, status: WorkflowStatus) -> None:
    producer = FakeProducer()
    gw.connect(RecordedPool(rows=pool_with(status).rows, recorded={"s-old"}), producer)
    doc = assert_problem(gw.client.post(URL, json={"fields": {"approved": True}}), 409)
    assert doc["status_now"] == status and "has already ended" in doc["detail"]
    assert producer.sent == []
    again = gw.client.post(URL, json={"fields": {"approved": True}, "signal_id": "s-old"})
    assert again.status_code == 202, "a recorded signal sent again is answered as accepted"
    assert producer.sent == [], "... and not sent again"


@pytest.mark.parametrize(("content", "fault"), [
    (b"", "Invalid JSON"),
    (b"{not json", "Invalid JSON"),
    (b"[]", "Input should be an object"),
    (b"{}", "fields: Field required"),
    (b'{"fields": []}', "fields: Input should be an object"),
    (b'{"fields": {}, "extra": 1}', "extra: Extra inputs are not permitted"),
    (b'{"fields": {}, "index": -1}', "index: Input should be greater than or equal to 0"),
    (b'{"fields": {}, "index": 2147483648}', "index: Input should be less than or equal"),
    (b'{"fields": {}, "index": true}', "index: Input should be a valid integer"),
    (b'{"fields": {}, "index": "1"}', "index: Input should be a valid integer"),
    (b'{"fields": {}, "signal_id": ""}', "signal_id: String should have at least 1"),
    (b'{"fields": {}, "signal_id": 7}', "signal_id: Input should be a valid string"),
    (json.dumps({"fields": {}, "signal_id": "x" * 201}).encode(),
     "signal_id: String should have at most 200"),
    (json.dumps({"fields": {"approved": True, "note": "a\x00b"}}).encode(),
     "fields.note: contains U+0000"),
    (json.dumps({"fields": {"approved": True}, "signal_id": "a\x00"}).encode(),
     "signal_id: contains U+0000"),
    (b'{"fields": {"approved": true, "n": 1e400}}', "fields.n: not a finite number"),
])
def test_a_malformed_body_is_422(gw: Gateway, content: bytes, fault: str) -> None:
    producer = connected(gw)
    doc = assert_problem(gw.client.post(URL, content=content), 422)
    assert fault in doc["detail"], doc
    assert producer.sent == []


def test_a_body_over_the_limit_is_413(gw: Gateway) -> None:
    producer = connected(gw)
    gw.hw.settings = dataclasses.replace(gw.hw.settings, max_payload_bytes=64 * 1024)
    big = {"fields": {"approved": True, "note": "x" * gw.hw.settings.max_payload_bytes}}
    doc = assert_problem(gw.client.post(URL, json=big), 413, "Request too large")
    assert doc["setting"] == "HEADWATER_MAX_PAYLOAD_BYTES"
    assert "HEADWATER_MAX_PAYLOAD_BYTES" in doc["detail"]
    assert producer.sent == []


def test_a_stalled_kafka_is_503(gw: Gateway) -> None:
    gw.connect(pool_with(), FakeProducer(stall=True))
    doc = assert_problem(gw.client.post(URL, json={"fields": {"approved": True}}), 503,
                         "Kafka unavailable")
    assert "signal" in doc["detail"]


def test_the_route_is_in_the_openapi_document(gw: Gateway) -> None:
    operation = gw.client.get("/openapi.json").json()["paths"][
        "/v1/workflows/{workflow_id}/signals/{name}"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["fields"]
    assert set(body["properties"]) == {"signal_id", "index", "fields"}
    assert {"202", "400", "404", "409", "413", "422", "503"} <= set(operation["responses"])
    assert "no wait" in operation["responses"]["400"]["description"]
