"""Pausing and resuming a run on the real broker: an attempt in flight when the run
pauses finishes and its result is applied, nothing is dispatched while paused, a sleep's
timer that comes due during the pause fires only after the resume (with its own
deadline), and the run ends with the output it would have had; a paused definition's new
run starts paused (the definition's document shows its pause, ``?paused=true`` lists the
run, a bulk dry run counts it), and the definition's resume runs it."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
from httpx_sse import aconnect_sse
from stackkit import Stack, history, read_topic
from test_kafka_submission import wait_status

from headwater.core import events as ev
from tests.polling import scaled, wait_until_async

SPEC = {"name": "pausing", "nodes": [
    {"id": "a", "task": "e2e.sleep", "input": {"seconds": 2}},
    {"id": "s", "kind": "sleep", "needs": ["a"], "duration": 1},
    {"id": "b", "task": "e2e.sleep", "needs": ["s", "a"],
     "input": {"seconds": "${nodes.a.output}"}},
]}


async def _until_event(client: httpx.AsyncClient, workflow_id: str, wanted: str,
                       timeout_s: float, attempt: int | None = None,
                       ) -> list[tuple[str, Any]]:
    """The run's events (SSE, from the start) up to the first of type ``wanted`` (of
    ``attempt``, if given)."""
    seen: list[tuple[str, Any]] = []

    async def read() -> None:
        async with aconnect_sse(client, "GET", f"/v1/workflows/{workflow_id}/events") as src:
            async for sse in src.aiter_sse():
                if sse.data:
                    seen.append((sse.event, json.loads(sse.data)))
                if sse.event == wanted and (
                        attempt is None or seen[-1][1].get("attempt") == attempt):
                    return
    await asyncio.wait_for(read(), scaled(timeout_s))
    return seen


async def test_pause_with_an_attempt_in_flight_and_a_timer_due_then_resume(
        stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = (await client.post("/v1/workflows", json={"workflow": SPEC})).json()["id"]
        await _until_event(client, workflow_id, "TaskStarted", 30)
        paused = await client.post(f"/v1/workflows/{workflow_id}/pause",
                                   json={"reason": "e2e", "request_id": "e2e-pause"})
        assert paused.status_code == 202, paused.text
        # a finishes while paused; the sleep starts, and its timer comes due while paused
        await _until_event(client, workflow_id, "TimerDeferred", 30)
        doc = (await client.get(f"/v1/workflows/{workflow_id}")).json()
        assert doc["status"] == "running" and doc["paused"] is not None, doc
        assert doc["paused"]["reason"] == "e2e"
        again = await client.post(f"/v1/workflows/{workflow_id}/pause")
        assert again.status_code == 202 and again.json()["was_paused"] is True
        resumed = await client.post(f"/v1/workflows/{workflow_id}/resume")
        assert resumed.status_code == 202, resumed.text
        final = await wait_status(stack, workflow_id, 60)
        assert final["status"] == "succeeded" and final["paused"] is None, final
        assert final["output"] == {"b": 2}
        ended = await client.post(f"/v1/workflows/{workflow_id}/resume")
        assert ended.status_code == 409
        assert ended.headers["content-type"] == "application/problem+json"
    records = await history(stack, workflow_id)
    types = [r.type for r in records]
    p, r = types.index("WorkflowPaused"), types.index("WorkflowResumed")
    assert types.count("WorkflowPaused") == 1, "the second pause recorded nothing"
    during = records[p + 1:r]
    assert not any(isinstance(e.body, ev.TaskDispatched) for e in during), types
    assert any(isinstance(e.body, ev.TaskSucceeded) and e.body.node == "a" for e in during)
    [due] = [e.body for e in during if isinstance(e.body, ev.TimerDeferred)]
    fired = [e for e in records if isinstance(e.body, ev.TimerFired)
             and e.body.timer_id == due.timer_id]
    assert [e.seq for e in fired] == [records[r].seq + 1], "it fired once, at the resume"
    assert due.fire_at_ms <= due.at_ms, "it came due during the pause"
    dispatched_b = [e for e in records if isinstance(e.body, ev.TaskDispatched)
                    and e.body.node == "b"]
    assert len(dispatched_b) == 1 and dispatched_b[0].seq > records[r].seq
    # the tasks topic (its partitions in any order): the dispatch records of this run,
    # a's before the pause and b's at the resume, none in between
    resumed_ms = records[r].body.at_ms
    sent = await read_topic(
        stack.topics.tasks("cpu"),
        lambda got: sum(d.workflow_id == workflow_id for d in got) >= 2, scaled(30))
    once = {(d.node, d.attempt): d for d in sent if d.workflow_id == workflow_id}  # copies
    assert sorted((d.node, d.at_ms >= resumed_ms) for d in once.values()) == [
        ("a", False), ("b", True)]


async def test_a_paused_definitions_new_run_starts_paused_and_its_resume_runs_it(
        stack: Stack) -> None:
    name = f"pausing-{uuid.uuid4().hex[:8]}"
    spec = {"name": name, "nodes": [{"id": "a", "task": "e2e.sleep", "input": {"seconds": 0}}]}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        stored = await client.put(f"/v1/definitions/{name}", json={"workflow": spec})
        assert stored.status_code == 201, stored.text
        paused = await client.post(f"/v1/definitions/{name}/pause", json={"reason": "e2e"})
        assert paused.status_code == 202 and paused.json()["runs"] == 0, paused.text
        shown = (await client.get(f"/v1/definitions/{name}")).json()["paused"]
        assert shown is not None and shown["reason"] == "e2e", shown
        workflow_id = (await client.post("/v1/workflows",
                                         json={"definition": name})).json()["id"]
        seen = await _until_event(client, workflow_id, "DispatchDeferred", 30)
        assert [t for t, _ in seen][:3] == ["WorkflowAccepted", "WorkflowPaused",
                                            "DispatchDeferred"]
        assert seen[1][1]["by"] == f"definition:{name}"
        await wait_until_async(lambda: _paused(client, workflow_id), 30, "paused in the view")
        assert await _listed(client, name, "true") == [workflow_id]
        assert await _listed(client, name, "false") == []
        tried = await client.post("/v1/operations", json={
            "action": "resume", "filter": {"definition": name, "paused": True},
            "dry_run": True})
        assert tried.json()["matched"] == 1, tried.text
        bad = await client.get("/v1/workflows", params={"paused": "maybe"})
        assert bad.status_code == 422, bad.text
        assert bad.headers["content-type"] == "application/problem+json"
        resumed = await client.post(f"/v1/definitions/{name}/resume")
        assert resumed.status_code == 202 and resumed.json()["runs"] == 1, resumed.text
        final = await wait_status(stack, workflow_id, 60)
        assert final["status"] == "succeeded", final
        assert (await client.get(f"/v1/definitions/{name}")).json()["paused"] is None
        assert await _listed(client, name, "true") == []
        assert await _listed(client, name, "false") == [workflow_id]


async def _listed(client: httpx.AsyncClient, definition: str, paused: str) -> list[str]:
    """The ids ``GET /v1/workflows?definition=&paused=`` lists."""
    page = await client.get("/v1/workflows", params={"definition": definition,
                                                      "paused": paused})
    assert page.status_code == 200, page.text
    return [item["id"] for item in page.json()["items"]]


async def _paused(client: httpx.AsyncClient, workflow_id: str) -> bool:
    doc = (await client.get(f"/v1/workflows/{workflow_id}")).json()
    return doc.get("paused") is not None


WIDE = {"name": "pausing-wide", "nodes": [
    {"id": "m", "kind": "map", "task": "e2e.sleep", "over": "${input.xs}",
     "input": {"seconds": "${item}"}, "max_concurrency": 24},
]}


async def test_a_pause_recalls_the_map_items_still_in_their_queue(stack: Stack) -> None:
    """24 items for workers that run 8 at a time each: those not started when the run
    pauses are recalled (``DispatchRecalled``), the workers skip or stop them (no
    outcome of a recalled attempt reaches ``reports``), and after the resume their next
    attempts run, so the map ends with every item's result."""
    xs = [1.5] * 24
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        workflow_id = (await client.post("/v1/workflows", json={
            "workflow": WIDE, "input": {"xs": xs}})).json()["id"]
        await _until_event(client, workflow_id, "TaskStarted", 30)
        paused = await client.post(f"/v1/workflows/{workflow_id}/pause")
        assert paused.status_code == 202, paused.text
        await _until_event(client, workflow_id, "WorkflowPaused", 30)
        await asyncio.sleep(scaled(2))  # the items that had started end while paused
        resumed = await client.post(f"/v1/workflows/{workflow_id}/resume")
        assert resumed.status_code == 202, resumed.text
        final = await wait_status(stack, workflow_id, 90)
        assert final["status"] == "succeeded", final
        assert final["output"] == {"m": xs}
    records = await history(stack, workflow_id)
    types = [r.type for r in records]
    p, r = types.index("WorkflowPaused"), types.index("WorkflowResumed")
    recalled = [e.body for e in records if isinstance(e.body, ev.DispatchRecalled)]
    assert recalled, "some items were still in their queue when the run paused"
    assert all(p < i < r for i, e in enumerate(records)
               if isinstance(e.body, ev.DispatchRecalled))
    assert not any(isinstance(e.body, ev.TaskDispatched) for e in records[p:r]), types
    succeeded = {(e.body.index, e.body.attempt) for e in records
                 if isinstance(e.body, ev.TaskSucceeded)}
    for b in recalled:
        assert (b.index, b.attempt) not in succeeded
        assert (b.index, b.attempt + 1) in succeeded, b
    keys = {(b.workflow_id, b.node, b.index, b.attempt) for b in recalled}
    reports = await read_topic(
        stack.topics.reports,
        lambda got: sum(isinstance(x, ev.TaskSucceeded) and x.workflow_id == workflow_id
                        for x in got) >= 24, scaled(30))
    ran = {(x.workflow_id, x.node, x.index, x.attempt) for x in reports
           if isinstance(x, ev.TaskSucceeded)}
    assert not keys & ran, "a recalled attempt was run to its end"


async def test_a_paused_run_holds_no_concurrency_permit(stack: Stack) -> None:
    """A run holding the only permit of a key (its attempt on a queue no worker serves)
    is paused: its attempt is recalled and gives the permit back, so another run of the
    key runs while it is paused. At the resume its next attempt asks again and gets the
    permit; once that run is cancelled, a third run of the key gets it too (the permit
    was given back under the attempt that held it, not kept by the recalled one)."""
    key = f"pause-{uuid.uuid4().hex[:8]}"
    stuck = {"name": "pausing-limited", "nodes": [
        {"id": "t", "task": "e2e.sleep", "queue": "nobody", "input": {"seconds": 0},
         "concurrency": {"key": key, "limit": 1}}]}
    runs = {**stuck, "nodes": [{**stuck["nodes"][0], "queue": "cpu"}]}
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        first = (await client.post("/v1/workflows", json={
            "workflow": stuck, "queue_anyway": True})).json()["id"]
        await _until_event(client, first, "TaskDispatched", 30)
        assert (await client.post(f"/v1/workflows/{first}/pause")).status_code == 202
        seen = await _until_event(client, first, "DispatchRecalled", 30)
        assert "PermitsReturned" in [t for t, _ in seen]
        second = (await client.post("/v1/workflows", json={"workflow": runs})).json()["id"]
        assert (await wait_status(stack, second, 60))["status"] == "succeeded"
        assert await _paused(client, first), "the first run is still paused"
        assert (await client.post(f"/v1/workflows/{first}/resume")).status_code == 202
        again = await _until_event(client, first, "TaskDispatched", 30, attempt=2)
        assert [d["attempt"] for t, d in again if t == "TaskDispatched"] == [1, 2]
        assert (await client.post(f"/v1/workflows/{first}/cancel", json={})).status_code \
            == 202
        third = (await client.post("/v1/workflows", json={"workflow": runs})).json()["id"]
        assert (await wait_status(stack, third, 60))["status"] == "succeeded"
