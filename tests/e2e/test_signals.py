"""Signals on the real broker: a waiting workflow approved over HTTP, and by a
``SignalSent`` record produced to ``control`` (Avro, and JSON with ``content-type:
application/json``); a 400 for an undeclared signal, a missing field and a field of the
wrong type; a bad record on ``control`` dead-lettered with its reason; a signal sent
before its wait starts kept and taken when it starts; the same ``signal_id`` twice
changing nothing."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
from stackkit import BOOTSTRAP, Stack, history, produce, read_topic, submit_to_kafka
from test_kafka_submission import wait_status

from headwater import codec
from headwater.core import events as ev
from headwater.topics import CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE
from services.common.topic_reader import TopicReader
from tests.polling import scaled, wait_until_async

DIGEST = "e2e.digest"
APPROVAL_FIELDS = {"approved": "boolean", "note": {"type": "string", "required": False}}


def approval_spec(before: dict[str, Any] | None = None,
                  after: dict[str, Any] | None = None) -> dict[str, Any]:
    """draft -> [before] -> approve (waits for ``approval``) -> [after] -> publish; the
    workflow's output is the approval's fields."""
    nodes: list[dict[str, Any]] = [{"id": "draft", "task": DIGEST, "input": {"value": 1}}]
    last = "draft"
    if before is not None:
        nodes.append({**before, "id": "before", "needs": [last]})
        last = "before"
    nodes.append({"id": "approve", "kind": "wait", "signal": "approval", "needs": [last],
                  "fields": APPROVAL_FIELDS})
    last = "approve"
    if after is not None:
        nodes.append({**after, "id": "after", "needs": [last]})
        last = "after"
    nodes.append({"id": "publish", "task": DIGEST, "needs": [last],
                  "input": {"value": "${nodes.approve.output}"}})
    return {"name": "approval", "nodes": nodes, "output": "${nodes.approve.output}"}


def gated(gate: Path) -> dict[str, Any]:
    """A task node that runs until the file ``gate`` exists (``e2e.stream``)."""
    return {"task": "e2e.stream", "input": {"words": ["a", "b"], "pause": 0.05,
                                             "gate": str(gate)}}


async def submit(client: httpx.AsyncClient, prefix: str, spec: dict[str, Any]) -> str:
    workflow_id = f"{prefix}-{uuid.uuid4().hex[:8]}"
    response = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": spec})
    assert response.status_code == 202, response.text
    return workflow_id


async def recorded(stack: Stack, workflow_id: str, body: type, count: int = 1,
                   timeout_s: float = 60) -> list[ev.HistoryEvent]:
    """The workflow's history, in seq order, once it holds ``count`` ``body`` events."""
    def enough(records: list[Any]) -> bool:
        return sum(1 for r in records
                   if r.workflow_id == workflow_id and isinstance(r.body, body)) >= count
    records = await read_topic(stack.topics.events, enough, scaled(timeout_s))
    return sorted((r for r in records if r.workflow_id == workflow_id), key=lambda r: r.seq)


async def signal(client: httpx.AsyncClient, workflow_id: str, name: str,
                 **body: Any) -> httpx.Response:
    return await client.post(f"/v1/workflows/{workflow_id}/signals/{name}", json=body)


def bodies(records: list[ev.HistoryEvent], body: type) -> list[Any]:
    return [r.body for r in records if isinstance(r.body, body)]


async def succeeded_with(stack: Stack, workflow_id: str,
                         fields: dict[str, Any]) -> list[ev.HistoryEvent]:
    """Assert the workflow succeeded with ``fields`` as its output (the optional ``note``
    null when left out), its history gap-free with one consumed signal; return the
    history."""
    fields = {"note": None, **fields}
    status = await wait_status(stack, workflow_id)
    assert status["status"] == "succeeded", status
    assert status["output"] == fields, status
    records = sorted(await history(stack, workflow_id), key=lambda r: r.seq)
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    [consumed] = bodies(records, ev.SignalConsumed)
    assert (consumed.node, consumed.name, consumed.fields) == ("approve", "approval", fields)
    return records


async def test_a_waiting_workflow_is_approved_over_http(stack: Stack) -> None:
    fields = {"approved": True, "note": "looks good ✓"}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = await submit(client, "http-approve", approval_spec())
        await recorded(stack, workflow_id, ev.WaitStarted)
        response = await signal(client, workflow_id, "approval", fields=fields)
    assert response.status_code == 202, response.text
    doc = response.json()
    assert (doc["workflow_id"], doc["signal"]) == (workflow_id, "approval")
    records = await succeeded_with(stack, workflow_id, fields)
    [sent] = bodies(records, ev.SignalSent)
    assert sent.signal_id == doc["signal_id"] and len(sent.signal_id) == 32


async def test_signal_records_on_control_approve_workflows_avro_and_json(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        by_avro = await submit(client, "avro-approve", approval_spec())
        by_json = await submit(client, "json-approve", approval_spec())
    await recorded(stack, by_avro, ev.WaitStarted)
    await recorded(stack, by_json, ev.WaitStarted)
    now = int(time.time() * 1000)
    avro = ev.SignalSent(by_avro, "approval", now, None, "ext-1", {"approved": True})
    await produce([(stack.topics.control, by_avro.encode(), codec.encode(avro))])
    doc = {"workflow_id": by_json, "name": "approval", "at_ms": now, "signal_id": "ext-2",
           "fields": {"approved": False, "note": "by JSON"}}
    await produce([(stack.topics.control, by_json.encode(), orjson.dumps(doc))],
                  headers=[(CONTENT_TYPE_HEADER, JSON_CONTENT_TYPE.encode())])
    await succeeded_with(stack, by_avro, {"approved": True})
    await succeeded_with(stack, by_json, {"approved": False, "note": "by JSON"})


async def test_an_undeclared_signal_or_a_bad_field_is_400(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = await submit(client, "refused", approval_spec())
        await recorded(stack, workflow_id, ev.WaitStarted)
        refusals = {
            "undeclared": await signal(client, workflow_id, "nobody",
                                       fields={"approved": True}),
            "missing": await signal(client, workflow_id, "approval", fields={"note": "n"}),
            "wrong type": await signal(client, workflow_id, "approval",
                                       fields={"approved": "yes"}),
        }
        for what, response in refusals.items():
            assert response.status_code == 400, (what, response.text)
            assert response.headers["content-type"] == "application/problem+json"
        assert "nobody" in refusals["undeclared"].json()["detail"]
        assert "approved" in refusals["missing"].json()["detail"]
        assert "approved" in refusals["wrong type"].json()["detail"]
        unknown = await signal(client, f"no-such-{uuid.uuid4().hex[:8]}", "approval",
                               fields={"approved": True})
        assert unknown.status_code == 404, unknown.text
        status = await client.get(f"/v1/workflows/{workflow_id}")
        assert status.json()["status"] == "running", "a refused signal changes nothing"
        ok = await signal(client, workflow_id, "approval", signal_id="ok-1",
                          fields={"approved": True})
        assert ok.status_code == 202, ok.text
    await succeeded_with(stack, workflow_id, {"approved": True})
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        ended = await signal(client, workflow_id, "approval", fields={"approved": True})
        # The projection records the taken signal a moment after the workflow's end.
        resent = await wait_until_async(
            lambda: signal(client, workflow_id, "approval", signal_id="ok-1",
                           fields={"approved": True}),
            30, "the recorded signal answered 202 again", until=lambda r: r.status_code == 202)
    assert ended.status_code == 409, ended.text
    assert resent.json()["signal_id"] == "ok-1", resent.text


async def test_a_bad_signal_record_is_dead_lettered_with_its_reason(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = await submit(client, "dead-signal", approval_spec())
        await recorded(stack, workflow_id, ev.WaitStarted)
        now = int(time.time() * 1000)
        bad = {
            codec.encode(ev.SignalSent(workflow_id, "nobody", now, None, "b-1",
                                       {"approved": True})): "nobody",
            codec.encode(ev.SignalSent(workflow_id, "approval", now, None, "b-2",
                                       {"note": "no approval"})): "approved",
        }
        await produce((stack.topics.control, workflow_id.encode(), value) for value in bad)

        def both(records: list[Any]) -> bool:
            return {r.value for r in records} >= set(bad)
        dead = await read_topic(stack.topics.dlq, both, scaled(60), decode=False)
        for record in (r for r in dead if r.value in bad):
            reason = dict(record.headers)["reason"].decode()
            assert workflow_id in reason and bad[record.value] in reason, reason
        ok = await signal(client, workflow_id, "approval", fields={"approved": True})
        assert ok.status_code == 202, ok.text
    records = await succeeded_with(stack, workflow_id, {"approved": True})
    assert [s.signal_id for s in bodies(records, ev.SignalSent)] == [ok.json()["signal_id"]]


async def test_a_signal_sent_before_its_wait_starts_is_taken_when_it_starts(
        stack: Stack, tmp_path: Path) -> None:
    gate = tmp_path / "signal-recorded"
    fields = {"approved": True, "note": "early"}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = await submit(client, "early", approval_spec(before=gated(gate)))
        await recorded(stack, workflow_id, ev.TaskStarted)  # draft, or already "before"
        response = await signal(client, workflow_id, "approval", fields=fields)
        assert response.status_code == 202, response.text
        kept = await recorded(stack, workflow_id, ev.SignalSent)
    assert not bodies(kept, ev.WaitStarted), "the wait had not started"
    gate.touch()  # only now may the node before the wait finish
    records = await succeeded_with(stack, workflow_id, fields)
    order = [type(r.body).__name__ for r in records
             if isinstance(r.body, ev.SignalSent | ev.WaitStarted | ev.SignalConsumed)]
    assert order == ["SignalSent", "WaitStarted", "SignalConsumed"], order


async def test_the_same_signal_id_twice_changes_nothing(stack: Stack, tmp_path: Path) -> None:
    gate = tmp_path / "duplicates-sent"
    fields = {"approved": True}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = await submit(client, "twice", approval_spec(after=gated(gate)))
        await recorded(stack, workflow_id, ev.WaitStarted)
        first = await signal(client, workflow_id, "approval", signal_id="once", fields=fields)
        assert first.status_code == 202, first.text
        await recorded(stack, workflow_id, ev.SignalConsumed)
        again = await signal(client, workflow_id, "approval", signal_id="once",
                             fields={"approved": False})
        late = await signal(client, workflow_id, "approval", signal_id="late",
                            fields={"approved": False})
        assert (again.status_code, late.status_code) == (202, 202), (again.text, late.text)
        # One partition keeps their order: once "late" is discarded, "once" was seen.
        await recorded(stack, workflow_id, ev.SignalDiscarded)
    gate.touch()
    records = await succeeded_with(stack, workflow_id, fields)
    assert [s.signal_id for s in bodies(records, ev.SignalSent)] == ["once"]
    [discarded] = bodies(records, ev.SignalDiscarded)
    assert discarded.signal_id == "late", discarded


async def test_a_signal_that_overtakes_its_submission_waits_for_it(stack: Stack) -> None:
    """The signal is on ``control`` before the submission is on ``submissions`` (two
    topics: the coordinator may read either first). It is kept in the table until the
    submission arrives, then taken when the wait starts; it once made every input of its
    workflow a dead letter ("bad waiting inputs entry: 'SignalSent'")."""
    workflow_id = f"overtaken-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    early = ev.SignalSent(workflow_id, "approval", now, None, "first", {"approved": True})
    await produce([(stack.topics.control, workflow_id.encode(), codec.encode(early))])
    await all_committed(stack, stack.topics.control)  # the coordinator took it first
    await submit_to_kafka(stack, ev.WorkflowSubmitted(workflow_id, approval_spec(), None,
                                                      now + 1))
    records = await succeeded_with(stack, workflow_id, {"approved": True})
    order = [type(r.body).__name__ for r in records
             if isinstance(r.body, ev.SignalSent | ev.WaitStarted | ev.SignalConsumed)]
    assert order == ["SignalSent", "WaitStarted", "SignalConsumed"], order


async def all_committed(stack: Stack, topic: str) -> None:
    """Wait until the coordinators' group has committed every record of ``topic``."""
    async with TopicReader(BOOTSTRAP) as reader:
        partitions = await reader.partitions(topic)

        async def behind() -> int:
            end = await reader.end_offsets(topic, partitions)
            done = await reader.committed(stack.topics.coordinator_app_id, topic, partitions)
            return sum(end[p] - done.get(p, 0) for p in partitions)

        await wait_until_async(behind, 60, f"{topic} committed", until=lambda n: n == 0)


async def test_an_early_signal_past_a_waits_items_is_discarded_when_it_starts(
        stack: Stack, tmp_path: Path) -> None:
    """Sent before its wait starts, a signal's index cannot be judged; once the wait
    starts with 3 items, the one for item 7 is discarded (its received row too) rather
    than kept for good, and the projection still agrees with the history."""
    from test_audit_tools import replay

    gate = tmp_path / "early-signals-sent"
    spec = {"name": "items", "nodes": [
        {"id": "draft", "task": DIGEST, "input": {"value": 1}},
        {**gated(gate), "id": "before", "needs": ["draft"]},
        {"id": "approve", "kind": "wait", "signal": "approval", "needs": ["before"],
         "fields": APPROVAL_FIELDS, "over": "${input.items}"}]}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = f"early-items-{uuid.uuid4().hex[:8]}"
        response = await client.post("/v1/workflows", json={
            "id": workflow_id, "workflow": spec, "input": {"items": ["a", "b", "c"]}})
        assert response.status_code == 202, response.text
        await recorded(stack, workflow_id, ev.TaskStarted)
        for index in (7, 0, 1, 2):
            response = await signal(client, workflow_id, "approval", index=index,
                                    signal_id=f"item-{index}", fields={"approved": True})
            assert response.status_code == 202, response.text
        await recorded(stack, workflow_id, ev.SignalSent, count=4)
        gate.touch()
        status = await wait_status(stack, workflow_id)
        assert status["status"] == "succeeded", status
        doc = (await client.get(f"/v1/workflows/{workflow_id}")).json()
    records = await history(stack, workflow_id)
    [dropped] = bodies(records, ev.SignalDiscarded)
    assert (dropped.signal_id, dropped.index) == ("item-7", 7)
    assert dropped.reason == "wait approve has 3 items: approve[7] is not one"
    rows = {s["signal_id"]: s["status"] for s in doc["signals"]}
    assert rows == {"item-7": "discarded", "item-0": "consumed", "item-1": "consumed",
                    "item-2": "consumed"}, doc["signals"]
    code, answer = await asyncio.to_thread(replay, stack, workflow_id)  # runs its own loop
    assert code == 0 and not answer["notes"], answer
